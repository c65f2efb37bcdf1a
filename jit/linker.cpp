#include "jit/linker.hpp"

#include <elf.h>

#include <chrono>
#include <cstring>

#include "jit/jit_error.hpp"

namespace gpuos::jit {
namespace {

nvJitLinkInputType input_type(InputKind k) {
  switch (k) {
    case InputKind::object: return NVJITLINK_INPUT_OBJECT;
    case InputKind::ltoir: return NVJITLINK_INPUT_LTOIR;
    case InputKind::cubin: return NVJITLINK_INPUT_CUBIN;
    case InputKind::fatbin: return NVJITLINK_INPUT_FATBIN;
    case InputKind::ptx: return NVJITLINK_INPUT_PTX;
  }
  return NVJITLINK_INPUT_ANY;
}

// Results that describe the inputs, not a misuse of nvJitLink: reported in LinkResult.
#define GPUOS_INPUT_ERRORS_                                                                          \
  NVJITLINK_ERROR_INVALID_INPUT, NVJITLINK_ERROR_PTX_COMPILE, NVJITLINK_ERROR_NVVM_COMPILE,          \
      NVJITLINK_ERROR_UNRECOGNIZED_INPUT, NVJITLINK_ERROR_INCORRECT_INPUT_TYPE,                      \
      NVJITLINK_ERROR_ARCH_MISMATCH, NVJITLINK_ERROR_MISSING_FATBIN, NVJITLINK_ERROR_FINALIZE

}  // namespace

std::vector<std::string> nvjitlink_options(const LinkOptions& o) {
  std::vector<std::string> v = {"-lto", "-arch=sm_" + std::to_string(o.arch)};
  if (o.lineinfo) v.push_back("-lineinfo");
  v.insert(v.end(), o.extra_options.begin(), o.extra_options.end());
  return v;
}

Linker::Linker(const LinkOptions& o) {
  const std::vector<std::string> opts = nvjitlink_options(o);
  std::vector<const char*> argv;
  for (const std::string& s : opts) argv.push_back(s.c_str());
  GPUOS_NVJITLINK_TRY(nvJitLinkCreate(&h_, static_cast<std::uint32_t>(argv.size()), argv.data()));
}

Linker::~Linker() {
  if (!h_) return;
  try {  // destructors never throw; destroying a valid handle cannot fail
    GPUOS_NVJITLINK_TRY(nvJitLinkDestroy(&h_));
  } catch (...) {
  }
}

std::string Linker::logs(bool error) const {
  std::size_t n = 0;
  std::string s;
  if (error) {
    GPUOS_NVJITLINK_TRY(nvJitLinkGetErrorLogSize(h_, &n));
    s.resize(n);
    if (n > 0) GPUOS_NVJITLINK_TRY(nvJitLinkGetErrorLog(h_, s.data()));
  } else {
    GPUOS_NVJITLINK_TRY(nvJitLinkGetInfoLogSize(h_, &n));
    s.resize(n);
    if (n > 0) GPUOS_NVJITLINK_TRY(nvJitLinkGetInfoLog(h_, s.data()));
  }
  while (!s.empty() && (s.back() == '\0' || s.back() == '\n')) s.pop_back();
  return s;
}

void Linker::add(InputKind kind, std::span<const char> data, std::string_view name) {
  if (failed_ || finished_) return;
  const std::string n(name);
  if (data.empty()) {
    failed_ = true;
    add_error_ = "input '" + n + "' is empty";
    return;
  }
  const auto t0 = std::chrono::steady_clock::now();
  const nvJitLinkResult r = GPUOS_NVJITLINK_TRY(
      nvJitLinkAddData(h_, input_type(kind), data.data(), data.size(), n.c_str()), GPUOS_INPUT_ERRORS_);
  seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (r != NVJITLINK_SUCCESS) {
    failed_ = true;
    add_error_ = "input '" + n + "' rejected (" + nvjitlink_error_name(r) + ")";
    if (std::string log = logs(true); !log.empty()) add_error_ += ":\n" + log;
  }
}

LinkResult Linker::finish() {
  LinkResult res;
  if (finished_) throw common::Failure(GPUOS_ERR_INTERNAL, "Linker::finish called twice");
  finished_ = true;
  if (failed_) {
    res.error_log = add_error_;
    res.seconds = seconds_;
    return res;
  }
  const auto t0 = std::chrono::steady_clock::now();
  // An undefined function in LTO-IR (a call to a symbol no input defines) comes back as
  // NVJITLINK_ERROR_INTERNAL with "Undefined reference to 'name'" in the error log: an input error.
  const nvJitLinkResult r = nvJitLinkComplete(h_);
  if (r != NVJITLINK_ERROR_INTERNAL || logs(true).find("Undefined reference") == std::string::npos)
    nvjitlink_check(r, "nvJitLinkComplete(h_)", __FILE__, __LINE__, {GPUOS_INPUT_ERRORS_});
  res.seconds = seconds_ + std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  res.info_log = logs(false);
  if (r != NVJITLINK_SUCCESS) {
    res.error_log = "link failed (" + nvjitlink_error_name(r) + ")";
    if (std::string log = logs(true); !log.empty()) res.error_log += ":\n" + log;
    return res;
  }
  // In a whole-program link ptxas only warns about an unresolved extern variable and turns it into a
  // zero-filled definition: a jump-table slot naming a missing operator would silently point at an
  // empty entry. Every unresolved symbol is an error here.
  std::string unresolved;
  for (std::size_t pos = 0; pos < res.info_log.size();) {
    std::size_t eol = res.info_log.find('\n', pos);
    if (eol == std::string::npos) eol = res.info_log.size();
    const std::string_view line(res.info_log.data() + pos, eol - pos);
    if (line.find("Unresolved extern") != std::string_view::npos) unresolved.append(line).push_back('\n');
    pos = eol + 1;
  }
  if (!unresolved.empty()) {
    unresolved.pop_back();
    res.error_log = "link failed: unresolved symbols:\n" + unresolved;
    return res;
  }
  std::size_t size = 0;
  GPUOS_NVJITLINK_TRY(nvJitLinkGetLinkedCubinSize(h_, &size));
  res.cubin.resize(size);
  if (size > 0) GPUOS_NVJITLINK_TRY(nvJitLinkGetLinkedCubin(h_, res.cubin.data()));
  res.ok = !res.cubin.empty();
  if (!res.ok) res.error_log = "nvJitLink returned an empty cubin";
  return res;
}

LinkResult link(std::span<const LinkInput> inputs, const LinkOptions& o) {
  Linker l(o);
  for (const LinkInput& in : inputs) l.add(in.kind, in.data, in.name);
  return l.finish();
}

namespace {

/// Calls f(sym, section header of its section, ELF header) for each defined symbol named `symbol`
/// until f returns true. False for anything that is not a little-endian ELF64.
template <class F>
bool for_symbol(std::span<const char> elf, std::string_view symbol, F&& f) {
  auto in_bounds = [&](std::uint64_t off, std::uint64_t len) {
    return off <= elf.size() && len <= elf.size() - off;
  };
  Elf64_Ehdr eh;
  if (!in_bounds(0, sizeof eh)) return false;
  std::memcpy(&eh, elf.data(), sizeof eh);
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_shentsize != sizeof(Elf64_Shdr))
    return false;
  if (!in_bounds(eh.e_shoff, std::uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr))) return false;
  auto section = [&](std::size_t i) {
    Elf64_Shdr sh;
    std::memcpy(&sh, elf.data() + eh.e_shoff + i * sizeof sh, sizeof sh);
    return sh;
  };
  for (std::size_t i = 0; i < eh.e_shnum; ++i) {
    const Elf64_Shdr sh = section(i);
    if (sh.sh_type != SHT_SYMTAB || sh.sh_entsize != sizeof(Elf64_Sym) || sh.sh_link >= eh.e_shnum) continue;
    const Elf64_Shdr strtab = section(sh.sh_link);
    if (!in_bounds(sh.sh_offset, sh.sh_size) || !in_bounds(strtab.sh_offset, strtab.sh_size)) continue;
    for (std::uint64_t off = 0; off + sizeof(Elf64_Sym) <= sh.sh_size; off += sizeof(Elf64_Sym)) {
      Elf64_Sym sym;
      std::memcpy(&sym, elf.data() + sh.sh_offset + off, sizeof sym);
      if (sym.st_shndx == SHN_UNDEF || sym.st_name >= strtab.sh_size) continue;
      const char* name = elf.data() + strtab.sh_offset + sym.st_name;
      const std::size_t max = strtab.sh_size - sym.st_name;
      const std::size_t len = strnlen(name, max);
      if (len < max && std::string_view(name, len) == symbol) {
        Elf64_Shdr home{};
        if (sym.st_shndx < eh.e_shnum) home = section(sym.st_shndx);
        if (f(sym, home)) return true;
      }
    }
  }
  return false;
}

}  // namespace

bool elf_defines_symbol(std::span<const char> elf, std::string_view symbol) {
  return for_symbol(elf, symbol, [](const Elf64_Sym&, const Elf64_Shdr&) { return true; });
}

std::optional<std::vector<char>> elf_symbol_data(std::span<const char> elf, std::string_view symbol) {
  std::optional<std::vector<char>> out;
  for_symbol(elf, symbol, [&](const Elf64_Sym& sym, const Elf64_Shdr& sec) {
    if (sec.sh_type != SHT_PROGBITS || sym.st_value < sec.sh_addr) return false;
    const std::uint64_t rel = sym.st_value - sec.sh_addr;
    if (rel > sec.sh_size || sym.st_size > sec.sh_size - rel) return false;
    const std::uint64_t off = sec.sh_offset + rel;
    if (off > elf.size() || sym.st_size > elf.size() - off) return false;
    out.emplace(elf.data() + off, elf.data() + off + sym.st_size);
    return true;
  });
  return out;
}

}  // namespace gpuos::jit
