// The CUDA resources the tool, the tests and the benchmarks own themselves: the primary context,
// device buffers, streams, modules. One set for all three. Every driver call goes through the library's
// loader and error path (host/driver.hpp, GPUOS_CU_TRY): a failure throws common::Failure naming the
// call, the driver's error name and file:line. Everything runs in the device's primary context, the
// one the runtime uses.
//
// Rules the resident kernel imposes: allocate buffers and load modules before a runtime boots (a module
// load waits for an idle device), free them only after it is destroyed or suspended (cuMemFree waits
// for an idle device); copy on a Stream (non-blocking: it never waits for the resident kernel).
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace gpuos::support {

/// Retains a device's primary context and makes it current on the calling thread. Every thread that
/// calls the driver must make it current first (make_current()).
class PrimaryContext {
 public:
  explicit PrimaryContext(int ordinal);
  ~PrimaryContext();
  PrimaryContext(const PrimaryContext&) = delete;
  PrimaryContext& operator=(const PrimaryContext&) = delete;
  void make_current() const;
  CUdevice device() const { return dev_; }
  CUcontext get() const { return ctx_; }

 private:
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
};

/// An owning device allocation. A failing free (after a device fault) is ignored: the fault has been
/// reported already.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = 0, o.bytes_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  template <class T>
  T* as(std::size_t offset_elems = 0) const { return reinterpret_cast<T*>(ptr_) + offset_elems; }
  CUdeviceptr ptr() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }

 private:
  CUdeviceptr ptr_ = 0;
  std::size_t bytes_ = 0;
};

/// A stream created with CU_STREAM_NON_BLOCKING: it never synchronizes with the legacy stream or other
/// blocking streams, so its copies do not wait for the resident kernel to exit.
class Stream {
 public:
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  CUstream get() const { return s_; }
  void sync() const;
  /// Both copy and return when the bytes have arrived.
  void upload(CUdeviceptr dst, const void* src, std::size_t bytes) const;
  void download(void* dst, CUdeviceptr src, std::size_t bytes) const;
  /// Sets `count` 32-bit words to a quiet NaN, so a result nobody wrote never passes a check.
  void poison(CUdeviceptr dst, std::size_t count) const;

 private:
  CUstream s_ = nullptr;
};

/// A loaded module (an embedded cubin). Load before a runtime boots.
class Module {
 public:
  explicit Module(const void* image);
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  CUfunction get(const char* name) const;

 private:
  CUmodule mod_ = nullptr;
};

/// Pinned host memory mapped into the device's address space (a doorbell, a flag the GPU polls): the
/// host writes and reads it through host(), kernels through device(). Zeroed at allocation.
class MappedHost {
 public:
  explicit MappedHost(std::size_t bytes);
  ~MappedHost();
  MappedHost(const MappedHost&) = delete;
  MappedHost& operator=(const MappedHost&) = delete;
  template <class T>
  T* host(std::size_t offset_elems = 0) const { return static_cast<T*>(host_) + offset_elems; }
  /// The device address of host<T>(offset_elems).
  template <class T>
  CUdeviceptr device(std::size_t offset_elems = 0) const { return dev_ + offset_elems * sizeof(T); }

 private:
  void* host_ = nullptr;
  CUdeviceptr dev_ = 0;
};

/// A CUDA event (for timing with cuEventElapsedTime).
class Event {
 public:
  Event();
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  CUevent get() const { return e_; }

 private:
  CUevent e_ = nullptr;
};

/// A kernel launch, as a plain launch or a graph node: one function, a 1-D grid and block, its arguments.
struct KernelLaunch {
  CUfunction fn = nullptr;
  unsigned grid = 1, block = 1, smem = 0;
  void** params = nullptr;
  void launch(CUstream s) const;
};

/// A CUDA graph of kernel nodes: add() them, instantiate() once, launch() replays it.
class KernelGraph {
 public:
  KernelGraph();
  ~KernelGraph();
  KernelGraph(const KernelGraph&) = delete;
  KernelGraph& operator=(const KernelGraph&) = delete;
  /// A node that runs after the nodes `after` (indices that earlier add() calls returned); its arguments
  /// are copied. Returns its index.
  std::size_t add(const KernelLaunch& k, std::span<const std::size_t> after = {});
  void instantiate();
  void launch(CUstream s) const;

 private:
  CUgraph graph_ = nullptr;
  CUgraphExec exec_ = nullptr;
  std::vector<CUgraphNode> nodes_;
};

/// A context of its own (not the primary one) on a device, current on the constructing thread until
/// it is destroyed; then the context that was current before is current again. Context-wide settings
/// that the primary context cannot take back (CUDA's device malloc heap size, fixed once a kernel that
/// calls malloc has run) start fresh in each. Everything made in it (buffers, streams, modules) must be
/// destroyed before it.
class OwnContext {
 public:
  explicit OwnContext(CUdevice dev);
  ~OwnContext();
  OwnContext(const OwnContext&) = delete;
  OwnContext& operator=(const OwnContext&) = delete;
  CUcontext get() const { return ctx_; }

 private:
  CUcontext ctx_ = nullptr;
  CUcontext previous_ = nullptr;
};

/// Loads a module the process has never loaded (as a framework loads a kernel lazily, on its first
/// launch: PTX, which the driver compiles), runs its kernel on `s` (one block of 256 threads, each
/// writing `value` to out[thread]), waits for it and unloads the module. For the tests and benchmarks of
/// sharing the GPU with a runtime: a module load waits for every kernel of the context to end.
void run_fresh_module(const Stream& s, CUdeviceptr out, std::uint32_t value);

/// The process's copy stream (created on first use, in the context ensure_context() makes current).
const Stream& copy_stream();

/// Retains device `ordinal`'s primary context for the rest of the process (once) and makes it current on
/// the calling thread.
void use_device(int ordinal = 0);
/// Makes the context use_device retained current on the calling thread if none is; before any
/// use_device, retains device 0's (the process-wide helpers below then outlive every runtime: a runtime's
/// release can otherwise destroy the primary context under them).
void ensure_context();

/// A device array of `count` T with copies through one process-wide Stream (the tests' buffers). Its
/// members make use_device's context current on the calling thread when none is.
template <class T>
class DeviceArray {
 public:
  explicit DeviceArray(std::size_t count) : buf_((ensure_context(), count * sizeof(T))), n_(count) {}
  T* get() const { return buf_.as<T>(); }
  CUdeviceptr ptr() const { return buf_.ptr(); }
  std::size_t size() const { return n_; }
  void upload(const std::vector<T>& h, std::size_t offset = 0) {
    ensure_context();
    copy_stream().upload(buf_.ptr() + offset * sizeof(T), h.data(), h.size() * sizeof(T));
  }
  std::vector<T> download(std::size_t count, std::size_t offset = 0) const {
    std::vector<T> h(count);
    ensure_context();
    copy_stream().download(h.data(), buf_.ptr() + offset * sizeof(T), count * sizeof(T));
    return h;
  }
  std::vector<T> download() const { return download(n_); }

 private:
  DeviceBuffer buf_;
  std::size_t n_;
};

/// Free and total bytes of the current context's device (use_device's context when none is current;
/// cuMemGetInfo), for the memory checks of long runs: what other processes hold counts as used too.
struct MemoryInfo {
  std::size_t free = 0, total = 0;
};
MemoryInfo device_memory();

/// Copies between host memory and any device pointer (a block of the gpuos heap, say) on copy_stream().
void copy_to_device(void* dst, const void* src, std::size_t bytes);
void copy_to_host(void* dst, const void* src, std::size_t bytes);

}  // namespace gpuos::support
