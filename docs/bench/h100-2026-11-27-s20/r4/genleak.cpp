// Device memory in use (cuMemGetInfo) across generation switches of one runtime, with and without tasks
// in flight, and across suspend/resume.
#include <cuda.h>
#include <cstdio>
#include <string>
#include "gpuos/gpuos.h"
#include "tools/tag_operator.hpp"
static double used_mib(size_t base) { size_t f, t; cuMemGetInfo(&f, &t); return ((t - f) - (double)base) / 1048576.0; }
#define G(x) do { gpuos_status s = (x); if (s != GPUOS_OK) { std::printf("%s: %s %s\n", #x, gpuos_status_name(s), gpuos_last_error()); return 1; } } while (0)
int main(int argc, char** argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 600;
  gpuos_options o; gpuos_options_init(&o);
  gpuos_runtime* rt; G(gpuos_create(&o, &rt));
  size_t f, t; cuMemGetInfo(&f, &t); size_t base = t - f;
  std::printf("base used %.2f MiB\n", base / 1048576.0);
  for (int i = 1; i <= n; ++i) {
    std::string src = gpuos::tools::tag_source("tagx", 1u << (i % 8));
    G(gpuos_load_operator_source(rt, "tagx.cu", src.data(), src.size(), nullptr));
    if (i % 100 == 0) std::printf("switch %d: used %+.2f MiB\n", i, used_mib(base));
  }
  G(gpuos_suspend(rt)); G(gpuos_resume(rt));
  std::printf("after suspend (retired unloaded): used %+.2f MiB\n", used_mib(base));
  for (int i = 1; i <= n; ++i) {
    G(gpuos_suspend(rt)); G(gpuos_resume(rt));
    if (i % 100 == 0) std::printf("suspend %d: used %+.2f MiB\n", i, used_mib(base));
  }
  for (int i = 1; i <= n; ++i) {
    std::string src = gpuos::tools::tag_source("tagx", 1u << (i % 8));
    G(gpuos_load_operator_source(rt, "tagx.cu", src.data(), src.size(), nullptr));
    G(gpuos_suspend(rt)); G(gpuos_resume(rt));
    if (i % 100 == 0) std::printf("switch+suspend %d: used %+.2f MiB\n", i, used_mib(base));
  }
  G(gpuos_destroy(rt));
  return 0;
}
