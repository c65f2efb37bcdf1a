// LTO-IR and objects -> one cubin, with nvJitLink.
//
// The resident kernel calls operators through device function pointers, which are only valid inside
// the image that defines them, so the scheduler (an nvcc `-rdc=true` object: relocatable SASS, linked as
// it is, or LTO-IR with `-dlto`), the operators (NVRTC LTO-IR) and the jump table that names them are
// linked into ONE cubin here, with link-time optimization of the LTO-IR inputs (`-lto -arch=sm_XX`).
//
// Problems with the inputs (undefined or duplicate symbols, garbage bytes, a wrong arch) are results:
// ok is false and error_log holds nvJitLink's explanation. An unresolved extern variable, which
// nvJitLink only warns about (ptxas makes it a zero-filled definition), is an error here too. Misuse
// and internal failures of nvJitLink throw gpuos::common::Failure.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

struct nvJitLink;  // nvJitLink.h: typedef struct nvJitLink* nvJitLinkHandle

namespace gpuos::jit {

enum class InputKind {
  object,  ///< host object with embedded device code (nvcc -c -rdc=true -dlto)
  ltoir,   ///< LTO-IR (NVRTC -dlto, nvrtcGetLTOIR)
  cubin,
  fatbin,
  ptx,
};

struct LinkOptions {
  unsigned arch = 90;  ///< sm_<arch>
  bool lineinfo = true;
  std::vector<std::string> extra_options;  ///< passed to nvJitLink as they are ("-O3", "-maxrregcount=N")
};

/// The exact nvJitLink options of a link.
std::vector<std::string> nvjitlink_options(const LinkOptions& o);

struct LinkResult {
  bool ok = false;
  std::vector<char> cubin;  ///< ELF; non-empty iff ok
  std::string error_log;    ///< nvJitLink's error log (and which input it rejected)
  std::string info_log;
  double seconds = 0;
};

/// One link. Add every input, then finish() once.
class Linker {
 public:
  explicit Linker(const LinkOptions& o);
  ~Linker();
  Linker(const Linker&) = delete;
  Linker& operator=(const Linker&) = delete;

  /// Adds an input (copied by nvJitLink). `name` appears in nvJitLink's messages. An input nvJitLink
  /// rejects makes finish() fail with the reason; later inputs are ignored.
  void add(InputKind kind, std::span<const char> data, std::string_view name);
  LinkResult finish();

 private:
  std::string logs(bool error) const;
  ::nvJitLink* h_ = nullptr;
  bool failed_ = false;
  bool finished_ = false;
  std::string add_error_;
  double seconds_ = 0;
};

struct LinkInput {
  InputKind kind;
  std::span<const char> data;
  std::string name;
};

/// Links `inputs` in order: Linker, add each, finish.
LinkResult link(std::span<const LinkInput> inputs, const LinkOptions& o);

/// True when `elf` is an ELF image whose symbol table defines `symbol`: a check of a linked cubin that
/// needs no GPU and no external tool.
bool elf_defines_symbol(std::span<const char> elf, std::string_view symbol);

/// The initial bytes of `symbol` in an ELF image (its section's data at the symbol, st_size bytes), or
/// nullopt when it is not defined with data there. Relocated fields (pointers) read as stored in the
/// file; plain data (an OpEntry's arg_bytes) is exact. Needs no GPU.
std::optional<std::vector<char>> elf_symbol_data(std::span<const char> elf, std::string_view symbol);

}  // namespace gpuos::jit
