#include "jit/image.hpp"

#include <chrono>
#include <map>

#include "jit/cache.hpp"
#include "jit/jit_error.hpp"

namespace gpuos::jit {

ImageResult build_image(const ImageSpec& spec, const LinkOptions& link_options, const CompileOptions& table_options,
                        Cache* cache) {
  const auto t0 = std::chrono::steady_clock::now();
  ImageResult r;
  auto done = [&](std::string error) -> ImageResult {
    r.error = std::move(error);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return std::move(r);
  };

  // ---- consistency of the spec ------------------------------------------------------------------
  std::map<std::string, std::string> declared_by;  // operator -> unit (or "the base image")
  for (const std::string& op : spec.base_operators) declared_by.emplace(op, "the base image");
  for (const CompileResult* u : spec.units) {
    if (!u || !u->ok())
      return done("operator unit '" + (u ? u->source_name : std::string("(null)")) + "' did not compile" +
                  (u ? ":\n" + u->error_text() : std::string()));
    for (const std::string& op : u->operators) {
      auto [it, fresh] = declared_by.emplace(op, u->source_name);
      if (!fresh)
        return done("operator '" + op + "' is declared twice: by " + it->second + " and by " + u->source_name);
    }
  }
  for (const TableEntry& e : spec.table)
    if (!declared_by.contains(e.op))
      return done("jump table slot " + std::to_string(e.slot) + ": no unit declares operator '" + e.op + "'");

  // ---- jump table ---------------------------------------------------------------------------------
  CompileOptions topt = table_options;
  topt.arch = link_options.arch;
  CompileResult table;
  try {
    table = compile_table(spec.table, topt, cache, spec.inline_operators, spec.base_operators);
  } catch (const common::Failure& f) {
    if (f.status() != GPUOS_ERR_INVALID_ARG) throw;
    return done(f.what());
  }
  if (!table.ok()) return done("the generated jump table did not compile:\n" + table.error_text());

  std::vector<LinkInput> inputs = spec.base;
  for (const CompileResult* u : spec.units) inputs.push_back({InputKind::ltoir, u->ltoir, u->source_name});
  inputs.push_back({InputKind::ltoir, table.ltoir, table.source_name});

  // ---- cached link ----------------------------------------------------------------------------------
  {
    const ToolchainVersions& tv = toolchain_versions();
    Hasher h;
    h.add("gpuos-jit-link/1");
    h.add(std::uint64_t{tv.nvjitlink_major}).add(std::uint64_t{tv.nvjitlink_minor});
    const std::vector<std::string> lopts = nvjitlink_options(link_options);
    h.add(std::uint64_t{lopts.size()});
    for (const std::string& o : lopts) h.add(o);
    h.add(std::uint64_t{inputs.size()});
    for (const LinkInput& in : inputs)
      h.add(static_cast<std::uint64_t>(in.kind)).add(hash128(std::string_view(in.data.data(), in.data.size())));
    r.key = h.digest();
  }
  if (cache) {
    if (auto c = cache->get(r.key)) {
      r.cubin = std::move(*c);
      r.ok = true;
      r.from_cache = true;
      return done({});
    }
  }
  LinkResult l = link(inputs, link_options);
  if (!l.ok) return done(l.error_log);
  r.cubin = std::move(l.cubin);
  r.ok = true;
  if (cache) cache->put(r.key, r.cubin);
  return done({});
}

}  // namespace gpuos::jit
