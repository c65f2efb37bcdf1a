// Experiment (not part of the project): where a dependent pair's round trip goes.
#include <gpuos/gpuos.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
using namespace gpuos;
static double now_us() { return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
template <class F> void measure(const char* name, F f) {
  std::vector<double> v;
  for (int i = 0; i < 3000; ++i) { double t0 = now_us(); f(); if (i >= 500) v.push_back(now_us() - t0); }
  std::sort(v.begin(), v.end());
  std::printf("%-60s p50 %7.2f us  p90 %7.2f us\n", name, v[v.size() / 2], v[v.size() * 9 / 10]);
}
int main() {
  Runtime rt;
  float* d = rt.alloc_array<float>(1 << 16);
  auto w = [&](Ticket t) { if (!rt.wait(t, std::chrono::seconds(10))) { std::puts(rt.diagnose().c_str()); std::exit(1); } };
  measure("nop", [&] { w(rt.submit(ops::nop())); });
  measure("fill(1)", [&] { w(rt.submit(ops::fill(d, 1.0f, 1))); });
  measure("nop, fill (independent), wait fill", [&] { rt.submit(ops::nop()); w(rt.submit(ops::fill(d, 1.0f, 1))); });
  measure("nop, wait, fill after nop (dependency dropped)", [&] { Ticket t = rt.submit(ops::nop()); w(t); w(rt.submit_after(ops::fill(d, 1.0f, 1), std::span<const Ticket>(&t, 1))); });
  measure("nop, fill after nop, wait fill", [&] { Ticket t = rt.submit(ops::nop()); w(rt.submit_after(ops::fill(d, 1.0f, 1), std::span<const Ticket>(&t, 1))); });
  measure("fill(2 tiles), fill after it, wait", [&] { Ticket t = rt.submit(ops::fill(d, 1.0f, 2 * GPUOS_ELEMS_PER_TILE)); w(rt.submit_after(ops::fill(d, 1.0f, 1), std::span<const Ticket>(&t, 1))); });
  measure("batch{nop, nop}, fill after 2nd, wait", [&] { std::vector<Task> b{ops::nop(), ops::nop()}; Ticket t = rt.submit_batch(b) + 1; w(rt.submit_after(ops::fill(d, 1.0f, 1), std::span<const Ticket>(&t, 1))); });
  Lane lane(rt);
  measure("lane: nop, fill, wait fill", [&] { rt.submit_after(ops::nop(), {}, &lane); w(rt.submit_after(ops::fill(d, 1.0f, 1), {}, &lane)); });
  if (std::getenv("DIAG")) {
    for (int i = 0; i < 20; ++i) { Ticket t = rt.submit(ops::nop()); w(rt.submit_after(ops::fill(d, 1.0f, 1), std::span<const Ticket>(&t, 1))); }
    std::puts(rt.diagnose().c_str());
  }
  return 0;
}
