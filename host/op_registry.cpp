#include "host/op_registry.hpp"

#include <algorithm>
#include <cstring>

#include "common/error.hpp"

namespace gpuos::detail {
namespace {

using common::fail;

template <std::size_t N>
void copy_str(char (&dst)[N], const std::string& s) {
  const std::size_t n = std::min(N - 1, s.size());
  std::memcpy(dst, s.data(), n);
  dst[n] = '\0';
}

}  // namespace

OpRegistry::OpRegistry() {
  for (std::uint32_t i = 0; i < GPUOS_BUILTIN_OP_COUNT; ++i) ids_[gpuos_builtin_op_name(i)] = i;
}

std::optional<std::uint32_t> OpRegistry::live_id(const std::string& name) const {
  auto it = ids_.find(name);
  if (it == ids_.end() || !accept_.accepts(it->second)) return std::nullopt;
  return it->second;
}

std::string OpRegistry::clash(const std::string& unit, const std::vector<std::string>& operators,
                              const Served& others) const {
  for (const std::string& op : operators) {
    auto it = ids_.find(op);
    if (it != ids_.end() && it->second < GPUOS_BUILTIN_OP_COUNT)
      return "operator '" + op + "' is the name of a built-in operator";
    if (it != ids_.end() && aliases_.contains(it->second)) return "operator '" + op + "' is the name of an alias";
    for (const auto& [uname, u] : others.units)
      if (uname != unit && std::find(u.serving->operators.begin(), u.serving->operators.end(), op) != u.serving->operators.end())
        return "operator '" + op + "' is already declared by " + uname;
  }
  return "";
}

OpRegistry::Plan OpRegistry::plan(Served next, const std::string& focus) const {
  Plan p;
  // Names: each declared by one unit only, none a built-in or an alias. The focus (the source the call
  // is about) is named first in a message, whichever unit came first.
  std::map<std::string, std::string> declared;
  for (const auto& [uname, u] : next.units) {
    const std::string why = clash(uname, u.serving->operators, Served{});
    if (!why.empty()) fail(GPUOS_ERR_INVALID_ARG, uname + ": error: " + why);
    for (const std::string& op : u.serving->operators) {
      auto [d, fresh] = declared.emplace(op, uname);
      if (!fresh) {
        const bool focus_first = d->second == focus;
        fail(GPUOS_ERR_INVALID_ARG, (focus.empty() ? uname : focus) + ": error: operator '" + op +
                                        "' is already declared by " + (focus_first ? uname : d->second));
      }
    }
  }
  // Ids: stable per name; a new name takes the next free id.
  p.next_id = next_id_;
  next.ops.clear();
  for (const auto& [op, uname] : declared) {
    std::uint32_t id;
    if (auto it = ids_.find(op); it != ids_.end()) {
      id = it->second;
    } else {
      if (p.next_id >= GPUOS_OP_HEAP_CTL)
        fail(GPUOS_ERR_INVALID_ARG,
             "no free operator id for '" + op + "' (GPUOS_MAX_OPS is " + std::to_string(GPUOS_MAX_OPS) + ")");
      id = p.next_id++;
      p.new_ids[op] = id;
    }
    next.ops[id] = LoadedOp{op, uname, 0, 0};
  }
  p.next = std::move(next);
  return p;
}

void OpRegistry::complete(Plan& p, const std::function<std::optional<std::uint32_t>(const std::string&)>& arg_bytes_of,
                          std::uint64_t number) const {
  for (auto& [id, op] : p.next.ops) {
    const std::optional<std::uint32_t> bytes = arg_bytes_of(op.name);
    if (!bytes || *bytes > GPUOS_MAX_ARG_BYTES)
      fail(GPUOS_ERR_INTERNAL, "cannot read the argument size of operator '" + op.name + "' from the image");
    op.arg_bytes = *bytes;
    auto old = cur_.ops.find(id);
    const bool same = old != cur_.ops.end() && old->second.unit == op.unit &&
                      cur_.units.at(op.unit).hash == p.next.units.at(op.unit).hash;
    op.generation = same ? old->second.generation : number;
  }
  // An alias's targets all take the same argument size, and its current target stays loaded.
  for (const auto& [logical, a] : aliases_) {
    const std::uint32_t t = a.targets.back();
    auto it = p.next.ops.find(t);
    if (t >= GPUOS_BUILTIN_OP_COUNT && it == p.next.ops.end())
      fail(GPUOS_ERR_INVALID_ARG,
           "operator id " + std::to_string(t) + " is the current target of an alias: it cannot be removed");
    if (it != p.next.ops.end() && it->second.arg_bytes != a.arg_bytes)
      fail(GPUOS_ERR_INVALID_ARG, "operator '" + it->second.name + "' is the target of an alias of " +
                                      std::to_string(a.arg_bytes) + "-byte arguments; the new version takes " +
                                      std::to_string(it->second.arg_bytes));
  }
  // Operators that go away, or whose argument size changes, stop accepting tasks before the switch; the
  // ones already submitted finish on the old image.
  p.retiring.clear();
  for (const auto& [id, op] : cur_.ops) {
    auto it = p.next.ops.find(id);
    if (it == p.next.ops.end() || it->second.arg_bytes != op.arg_bytes) p.retiring.push_back(id);
  }
}

void OpRegistry::commit(Plan&& p, std::uint64_t number) {
  for (auto& [uname, u] : p.next.units) {
    auto old = cur_.units.find(uname);
    if (old == cur_.units.end() || old->second.hash != u.hash) u.generation = number;
    errors_.erase(uname);
  }
  for (const auto& [op, id] : p.new_ids) ids_[op] = id;
  next_id_ = p.next_id;
  for (const auto& [id, op] : cur_.ops)
    if (!p.next.ops.contains(id)) accept_.refuse(id);
  for (const auto& [id, op] : p.next.ops) accept_.accept(id, op.arg_bytes);
  prev_ = std::move(cur_);
  cur_ = std::move(p.next);
  have_prev_ = true;
}

std::vector<std::uint32_t> OpRegistry::plan_rollback() const {
  if (!have_prev_) fail(GPUOS_ERR_UNAVAILABLE, "there is no previous generation to roll back to");
  for (const auto& [logical, a] : aliases_) {
    const std::uint32_t t = a.targets.back();
    if (t >= GPUOS_BUILTIN_OP_COUNT && !prev_.ops.contains(t))
      fail(GPUOS_ERR_INVALID_ARG, "the previous generation lacks operator id " + std::to_string(t) +
                                      ", the current target of an alias: point the alias elsewhere first");
  }
  std::vector<std::uint32_t> retiring;
  for (const auto& [id, op] : cur_.ops) {
    auto it = prev_.ops.find(id);
    if (it == prev_.ops.end() || it->second.arg_bytes != op.arg_bytes) retiring.push_back(id);
  }
  return retiring;
}

void OpRegistry::commit_rollback() {
  for (const auto& [id, op] : cur_.ops)
    if (!prev_.ops.contains(id)) accept_.refuse(id);
  for (const auto& [id, op] : prev_.ops) accept_.accept(id, op.arg_bytes);
  std::swap(cur_, prev_);
}

OpRegistry::AliasPlan OpRegistry::plan_alias(const std::string& alias, const std::string& target) const {
  AliasPlan p;
  auto t = ids_.find(target);
  if (t == ids_.end() || !accept_.accepts(t->second))
    fail(GPUOS_ERR_INVALID_ARG, "alias target '" + target + "' is not a live operator");
  if (aliases_.contains(t->second))
    fail(GPUOS_ERR_INVALID_ARG, "alias target '" + target + "' is an alias itself (point at an operator)");
  p.target = t->second;
  p.arg_bytes = *accept_.arg_bytes(p.target);
  if (auto a = ids_.find(alias); a != ids_.end()) {
    p.logical = a->second;
    auto it = aliases_.find(p.logical);
    if (it == aliases_.end()) fail(GPUOS_ERR_INVALID_ARG, "'" + alias + "' is an operator, not an alias");
    if (it->second.arg_bytes != p.arg_bytes)
      fail(GPUOS_ERR_INVALID_ARG, "alias '" + alias + "' takes " + std::to_string(it->second.arg_bytes) +
                                      "-byte arguments; '" + target + "' takes " + std::to_string(p.arg_bytes));
  } else {
    if (alias.empty()) fail(GPUOS_ERR_INVALID_ARG, "alias name is empty");
    if (next_id_ >= GPUOS_OP_HEAP_CTL) fail(GPUOS_ERR_INVALID_ARG, "no free operator id for alias '" + alias + "'");
    p.logical = next_id_;
    p.fresh = true;
  }
  return p;
}

OpRegistry::AliasPlan OpRegistry::plan_alias_rollback(const std::string& alias) const {
  auto a = ids_.find(alias);
  if (a == ids_.end() || !aliases_.contains(a->second)) fail(GPUOS_ERR_INVALID_ARG, "no alias is named '" + alias + "'");
  const Alias& al = aliases_.at(a->second);
  if (al.targets.size() < 2) fail(GPUOS_ERR_INVALID_ARG, "alias '" + alias + "' has no previous target");
  const std::uint32_t back = al.targets[al.targets.size() - 2];
  if (!accept_.accepts(back))
    fail(GPUOS_ERR_INVALID_ARG, "the previous target of alias '" + alias + "' (id " + std::to_string(back) +
                                    ") is no longer loaded");
  return AliasPlan{a->second, back, al.arg_bytes, false};
}

void OpRegistry::commit_alias(const std::string& alias, const AliasPlan& p, bool rollback) {
  if (p.fresh) {
    next_id_ = p.logical + 1;
    ids_[alias] = p.logical;
    aliases_[p.logical].arg_bytes = p.arg_bytes;
  }
  Alias& a = aliases_[p.logical];
  if (rollback)
    a.targets.pop_back();
  else
    a.targets.push_back(p.target);
  accept_.accept(p.logical, p.arg_bytes);
}

const std::string* OpRegistry::error_of(const std::string& source) const {
  auto it = errors_.find(source);
  return it == errors_.end() ? nullptr : &it->second;
}

std::string OpRegistry::name_of(std::uint32_t id) const {
  for (const auto& [n, i] : ids_)
    if (i == id) return n;
  return "";
}

std::vector<gpuos_op_info> OpRegistry::rows(
    const std::function<void(std::uint32_t, std::uint64_t&, std::uint64_t&)>& counts) const {
  std::vector<gpuos_op_info> out;
  auto row = [&](const std::string& name, std::uint32_t id, gpuos_op_kind kind, std::uint32_t bytes,
                 std::uint32_t target, std::uint64_t gen, const std::string& source, const std::string& error) {
    gpuos_op_info r{};
    copy_str(r.name, name);
    r.id = id;
    r.kind = kind;
    r.arg_bytes = bytes;
    r.target = target;
    r.generation = gen;
    copy_str(r.source, source);
    copy_str(r.error, error);
    if (id < GPUOS_MAX_OPS && counts) counts(id, r.completed, r.failed);
    out.push_back(r);
  };
  for (std::uint32_t i = 0; i < GPUOS_BUILTIN_OP_COUNT; ++i)
    row(gpuos_builtin_op_name(i), i, GPUOS_OP_KIND_BUILTIN, accept_.arg_bytes(i).value_or(0), i, 0, "", "");
  for (const auto& [id, op] : cur_.ops) {
    const std::string* e = error_of(op.unit);
    row(op.name, id, GPUOS_OP_KIND_LOADED, op.arg_bytes, id, op.generation, op.unit, e ? *e : "");
  }
  for (const auto& [logical, a] : aliases_)
    row(name_of(logical), logical, GPUOS_OP_KIND_ALIAS, a.arg_bytes, a.targets.empty() ? logical : a.targets.back(), 0,
        "", "");
  for (const auto& [src, err] : errors_)
    if (!cur_.units.contains(src)) row("", UINT32_MAX, GPUOS_OP_KIND_FAILED, 0, UINT32_MAX, 0, src, err);
  return out;
}

}  // namespace gpuos::detail
