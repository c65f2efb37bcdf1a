#include "host/driver.hpp"

#include <dlfcn.h>
#include <cstdlib>

#include <atomic>
#include <mutex>
#include <string>

#include "host/cu_check.hpp"

namespace gpuos::detail {
namespace {

// Each entry is resolved by its name through cuGetProcAddress, which returns the version of that name
// cuda.h's CUDA_VERSION declares (cuMemAlloc -> cuMemAlloc_v2). A name cuda.h maps to a DIFFERENT function
// (cuGraphInstantiate -> cuGraphInstantiateWithFlags, whose arguments differ from the driver's
// "cuGraphInstantiate") would resolve to the wrong one: list the function it maps to instead.
constexpr bool same_function(const char* listed, const char* declared) {
  while (*listed)
    if (*listed++ != *declared++) return false;
  return *declared == '\0' || *declared == '_';  // the name itself or a versioned one (_v2)
}
#define GPUOS_DRIVER_STR_(x) #x
#define GPUOS_DRIVER_XSTR_(x) GPUOS_DRIVER_STR_(x)
#define GPUOS_DRIVER_CHECK(name) \
  static_assert(same_function(#name, GPUOS_DRIVER_XSTR_(name)), "cuda.h maps " #name " to another function: list that one");
GPUOS_DRIVER_FUNCTIONS(GPUOS_DRIVER_CHECK)
#undef GPUOS_DRIVER_CHECK

Driver g_driver;
std::atomic<bool> g_loaded{false};
std::mutex g_mutex;
std::string g_error;  // sticky load error, reported again on every later attempt
gpuos_status g_error_status = GPUOS_OK;

using GetProc = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

void load_locked() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    g_error_status = GPUOS_ERR_NO_DEVICE;
    g_error = std::string("no CUDA driver: cannot load libcuda.so.1 (") + dlerror() + ")";
    return;
  }
  auto get_proc = reinterpret_cast<GetProc>(dlsym(lib, "cuGetProcAddress_v2"));
  if (!get_proc) {
    g_error_status = GPUOS_ERR_DRIVER;
    g_error = "the CUDA driver is too old: libcuda.so.1 has no cuGetProcAddress_v2 (CUDA 12 or newer needed)";
    return;
  }
  Driver d;
  std::string missing;
#define GPUOS_DRIVER_RESOLVE(name)                                                                 \
  {                                                                                              \
    void* p = nullptr;                                                                           \
    CUdriverProcAddressQueryResult q{};                                                          \
    if (get_proc(#name, &p, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &q) != CUDA_SUCCESS || !p) \
      missing += std::string(missing.empty() ? "" : ", ") + #name;                               \
    else                                                                                         \
      d.name = reinterpret_cast<decltype(d.name)>(p);                                            \
  }
  GPUOS_DRIVER_FUNCTIONS(GPUOS_DRIVER_RESOLVE)
#define GPUOS_DRIVER_RESOLVE_AS(name, declared) GPUOS_DRIVER_RESOLVE(name)
  GPUOS_DRIVER_VERSIONED(GPUOS_DRIVER_RESOLVE_AS)
#undef GPUOS_DRIVER_RESOLVE_AS
#undef GPUOS_DRIVER_RESOLVE
  if (d.cuDriverGetVersion) d.cuDriverGetVersion(&d.version);
  if (!missing.empty() || d.version < CUDA_VERSION) {
    g_error_status = GPUOS_ERR_DRIVER;
    g_error = "the CUDA driver supports CUDA " + std::to_string(d.version / 1000) + "." +
              std::to_string(d.version % 1000 / 10) + "; gpuos was built with CUDA " +
              std::to_string(CUDA_VERSION / 1000) + "." + std::to_string(CUDA_VERSION % 1000 / 10) +
              " and needs a driver at least that new" +
              (missing.empty() ? std::string() : " (missing entry points: " + missing + ")");
    return;
  }
  // Eager module loading, unless the process chose otherwise: with lazy loading (the driver's default)
  // cuModuleGetFunction loads the kernel's code after a generation switch has stopped the kernel, ~150
  // us of the serving pause; eagerly, that work is part of the module load, which starts while the old
  // generation still serves. On an H100 a switch's pause has a p50 of 364 us with lazy loading and of
  // 170 us with eager loading (docs/benchmarks.md, Generation switch). Read by the driver at its first
  // cuInit in the process: no effect if the process initialised CUDA before.
  setenv("CUDA_MODULE_LOADING", "EAGER", /*overwrite=*/0);
  CUresult r = d.cuInit(0);
  if (r != CUDA_SUCCESS) {
    const char* name = nullptr;
    d.cuGetErrorName(r, &name);
    g_error_status = r == CUDA_ERROR_NO_DEVICE ? GPUOS_ERR_NO_DEVICE : GPUOS_ERR_DRIVER;
    g_error = std::string("cuInit(0) failed: ") + (name ? name : "unknown error") +
              (r == CUDA_ERROR_NO_DEVICE ? " (no CUDA-capable device is visible)" : "");
    return;
  }
  g_driver = d;
  g_loaded.store(true, std::memory_order_release);
}

}  // namespace

const Driver& load_driver() {
  if (g_loaded.load(std::memory_order_acquire)) return g_driver;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_loaded.load(std::memory_order_relaxed) && g_error.empty()) load_locked();
  if (!g_loaded.load(std::memory_order_relaxed)) fail(g_error_status, g_error);
  return g_driver;
}

bool driver_loaded() noexcept { return g_loaded.load(std::memory_order_acquire); }

const Driver& drv() noexcept { return g_driver; }

}  // namespace gpuos::detail
