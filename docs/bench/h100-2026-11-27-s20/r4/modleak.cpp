// Loads and unloads one cubin many times; prints device memory in use (cuMemGetInfo) every 100 rounds.
#include <cuda.h>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <vector>
#include <thread>
#include <cstdlib>
#define CK(x) do { CUresult r = (x); if (r != CUDA_SUCCESS) { const char* n; cuGetErrorName(r, &n); std::printf("%s: %s\n", #x, n); return 1; } } while (0)
int main(int argc, char** argv) {
  std::ifstream f(argv[1], std::ios::binary);
  std::vector<char> img((std::istreambuf_iterator<char>(f)), {});
  int rounds = argc > 2 ? std::atoi(argv[2]) : 1000;
  CK(cuInit(0)); CUdevice d; CK(cuDeviceGet(&d, 0)); CUcontext c; CK(cuDevicePrimaryCtxRetain(&c, d)); CK(cuCtxSetCurrent(c));
  const bool launch = argc > 4; CUdeviceptr out; CK(cuMemAlloc(&out, 4096));
  size_t fr, tot; CK(cuMemGetInfo(&fr, &tot)); size_t base = tot - fr;
  std::printf("%s: %zu bytes, base used %.2f MiB\n", argv[1], img.size(), base / 1048576.0);
  CUmodule keep[2] = {nullptr, nullptr};
  for (int i = 1; i <= rounds; ++i) {
    CUmodule m = nullptr;
    if (argc > 5) {  // each load on a thread of its own, as a generation's image is loaded
      CUresult lr = CUDA_SUCCESS;
      std::thread t([&] { cuCtxSetCurrent(c); lr = cuModuleLoadData(&m, img.data()); });
      t.join();
      CK(lr);
    } else {
      CK(cuModuleLoadData(&m, img.data()));
    }
    if (argc > 3) {
      CUfunction fn; CK(cuModuleGetFunction(&fn, m, argv[3]));
      if (launch) { void* a[] = {&out}; CK(cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, nullptr, a, nullptr)); CK(cuCtxSynchronize()); }
    }
    // two loaded at once, as a generation switch keeps the previous image
    if (keep[1]) CK(cuModuleUnload(keep[1]));
    keep[1] = keep[0]; keep[0] = m;
    if (i % 100 == 0) { CK(cuMemGetInfo(&fr, &tot)); std::printf("round %d: used %+.2f MiB\n", i, (tot - fr - base) / 1048576.0); }
  }
  for (CUmodule m : keep) if (m) CK(cuModuleUnload(m));
  CK(cuMemGetInfo(&fr, &tot)); std::printf("all unloaded: used %+.2f MiB\n", (tot - fr - base) / 1048576.0);
  return 0;
}
