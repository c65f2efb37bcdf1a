// The operator registry: names, ids, what each generation serves, aliases, the accept table. Pure code:
// every rule a generation switch or an alias flip relies on is checked here without a GPU.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "host/op_registry.hpp"

using namespace gpuos::detail;
using gpuos::common::Failure;

namespace {

/// A compiled unit declaring `ops` (only the names matter to the registry), with content hash `h`.
Unit unit(std::vector<std::string> ops, std::uint64_t h = 1) {
  auto r = std::make_shared<gpuos::jit::CompileResult>();
  r->operators = std::move(ops);
  r->ltoir = {'x'};
  return Unit{r, gpuos::jit::Hash128{h, h}, 0};
}

/// Accepts the built-ins (as the boot image's jump table would), built-in i taking 8 i bytes.
void accept_builtins(OpRegistry& r) {
  for (std::uint32_t i = 0; i < GPUOS_BUILTIN_OP_COUNT; ++i) r.accept().accept(i, 8 * i);
}

/// Plans, completes (every operator takes `bytes`) and commits `next` as generation `number`.
OpRegistry::Plan apply(OpRegistry& r, Served next, std::uint64_t number, std::uint32_t bytes = 16,
                       const std::string& focus = "") {
  OpRegistry::Plan p = r.plan(std::move(next), focus);
  r.complete(p, [&](const std::string&) { return std::optional<std::uint32_t>(bytes); }, number);
  OpRegistry::Plan copy = p;
  r.commit(std::move(p), number);
  return copy;
}

std::string failure_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Failure& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("registry: new names take the next ids, kept for the runtime's life") {
  OpRegistry r;
  accept_builtins(r);
  Served s;
  s.units["a.cu"] = unit({"scale", "relu"});
  const OpRegistry::Plan p = apply(r, s, 1);
  CHECK(p.new_ids.size() == 2);
  // Ids are assigned in name order: relu, scale.
  CHECK(r.live_id("relu") == GPUOS_BUILTIN_OP_COUNT);
  CHECK(r.live_id("scale") == GPUOS_BUILTIN_OP_COUNT + 1);
  CHECK(r.accept().arg_bytes(GPUOS_BUILTIN_OP_COUNT + 1) == 16u);
  // Removed, then loaded again: the same id.
  apply(r, Served{}, 2);
  CHECK_FALSE(r.live_id("scale").has_value());
  CHECK_FALSE(r.accept().accepts(GPUOS_BUILTIN_OP_COUNT + 1));
  Served again;
  again.units["b.cu"] = unit({"scale"});
  apply(r, again, 3);
  CHECK(r.live_id("scale") == GPUOS_BUILTIN_OP_COUNT + 1);
  CHECK(r.live_id("add") == GPUOS_OP_ADD);
}

TEST_CASE("registry: a plan changes nothing until it is committed") {
  OpRegistry r;
  accept_builtins(r);
  Served s;
  s.units["a.cu"] = unit({"scale"});
  OpRegistry::Plan p = r.plan(s, "a.cu");
  r.complete(p, [](const std::string&) { return std::optional<std::uint32_t>(16); }, 1);
  CHECK_FALSE(r.live_id("scale").has_value());
  CHECK(r.serving().units.empty());
  CHECK_FALSE(r.has_previous());
}

TEST_CASE("registry: names clash with built-ins, aliases and other units") {
  OpRegistry r;
  accept_builtins(r);
  Served builtin;
  builtin.units["b.cu"] = unit({"add"});
  CHECK(contains(failure_of([&] { (void)r.plan(builtin, "b.cu"); }), "b.cu: error: operator 'add' is the name of a built-in"));

  Served two;
  two.units["x.cu"] = unit({"dup"});
  two.units["y.cu"] = unit({"dup"});
  const std::string why = failure_of([&] { (void)r.plan(two, "y.cu"); });
  CHECK(contains(why, "y.cu: error: operator 'dup' is already declared by x.cu"));

  Served s;
  s.units["a.cu"] = unit({"scale"});
  apply(r, s, 1);
  r.commit_alias("fast", r.plan_alias("fast", "scale"), false);
  Served alias_name;
  alias_name.units["c.cu"] = unit({"fast"});
  CHECK(contains(failure_of([&] { (void)r.plan(alias_name, "c.cu"); }), "is the name of an alias"));
  // The one-by-one form used when loading a directory.
  CHECK(contains(r.clash("d.cu", {"scale"}, r.serving()), "already declared by a.cu"));
  CHECK(r.clash("a.cu", {"scale"}, r.serving()).empty());  // a unit may redeclare its own names
}

TEST_CASE("registry: complete records argument sizes, generations and what retires") {
  OpRegistry r;
  accept_builtins(r);
  Served s;
  s.units["a.cu"] = unit({"keep"}, 1);
  s.units["b.cu"] = unit({"grow"}, 2);
  s.units["c.cu"] = unit({"gone"}, 3);
  apply(r, s, 1);
  const std::uint32_t keep = *r.live_id("keep"), grow = *r.live_id("grow"), gone = *r.live_id("gone");

  Served next = r.serving();
  next.units.erase("c.cu");
  next.units["b.cu"] = unit({"grow"}, 22);  // changed source
  OpRegistry::Plan p = r.plan(next, "b.cu");
  r.complete(p, [](const std::string& n) { return std::optional<std::uint32_t>(n == "grow" ? 24u : 16u); }, 2);
  CHECK(p.next.ops.at(keep).generation == 1);  // unchanged source: the version it came with
  CHECK(p.next.ops.at(grow).generation == 2);
  CHECK(p.next.ops.at(grow).arg_bytes == 24);
  CHECK(p.retiring == std::vector<std::uint32_t>{gone, grow});  // a removal and a changed size (id order)

  OpRegistry::Plan bad = r.plan(r.serving(), "");
  CHECK(contains(failure_of([&] { r.complete(bad, [](const std::string&) { return std::optional<std::uint32_t>(); }, 2); }),
                 "cannot read the argument size"));
  r.commit(std::move(p), 2);
  CHECK(r.accept().arg_bytes(grow) == 24u);
  CHECK_FALSE(r.accept().accepts(gone));
  CHECK(r.serving().units.at("b.cu").generation == 2);
  CHECK(r.serving().units.at("a.cu").generation == 1);
}

TEST_CASE("registry: an alias's target cannot go away or change its argument size") {
  OpRegistry r;
  accept_builtins(r);
  Served s;
  s.units["a.cu"] = unit({"v1"});
  s.units["b.cu"] = unit({"v2"});
  apply(r, s, 1);
  r.commit_alias("op", r.plan_alias("op", "v2"), false);
  Served without = r.serving();
  without.units.erase("b.cu");
  OpRegistry::Plan p = r.plan(without, "b.cu");
  CHECK(contains(failure_of([&] { r.complete(p, [](const std::string&) { return std::optional<std::uint32_t>(16); }, 2); }),
                 "is the current target of an alias: it cannot be removed"));
  OpRegistry::Plan q = r.plan(r.serving(), "b.cu");
  CHECK(contains(failure_of([&] { r.complete(q, [](const std::string&) { return std::optional<std::uint32_t>(32); }, 2); }),
                 "is the target of an alias of 16-byte arguments; the new version takes 32"));
}

TEST_CASE("registry: aliases are planned, committed and rolled back") {
  OpRegistry r;
  accept_builtins(r);
  Served s;
  s.units["a.cu"] = unit({"v1", "v2"});
  apply(r, s, 1);
  const OpRegistry::AliasPlan p = r.plan_alias("op", "v1");
  CHECK(p.fresh);
  CHECK(p.logical == GPUOS_BUILTIN_OP_COUNT + 2);
  CHECK_FALSE(r.accept().accepts(p.logical));  // registered only at commit
  r.commit_alias("op", p, false);
  CHECK(r.live_id("op") == p.logical);
  CHECK(r.accept().arg_bytes(p.logical) == 16u);
  CHECK(contains(failure_of([&] { (void)r.plan_alias_rollback("op"); }), "has no previous target"));
  const OpRegistry::AliasPlan q = r.plan_alias("op", "v2");
  CHECK_FALSE(q.fresh);
  CHECK(q.logical == p.logical);
  r.commit_alias("op", q, false);
  const OpRegistry::AliasPlan back = r.plan_alias_rollback("op");
  CHECK(back.target == *r.live_id("v1"));
  r.commit_alias("op", back, true);
  CHECK(contains(failure_of([&] { (void)r.plan_alias_rollback("op"); }), "has no previous target"));

  CHECK(contains(failure_of([&] { (void)r.plan_alias("x", "nothing"); }), "is not a live operator"));
  CHECK(contains(failure_of([&] { (void)r.plan_alias("x", "op"); }), "is an alias itself"));
  CHECK(contains(failure_of([&] { (void)r.plan_alias("v2", "v1"); }), "is an operator, not an alias"));
  CHECK(contains(failure_of([&] { (void)r.plan_alias("", "v1"); }), "alias name is empty"));
  CHECK(contains(failure_of([&] { (void)r.plan_alias("op", "add"); }), "takes 16-byte arguments; 'add' takes 24"));
  CHECK(contains(failure_of([&] { (void)r.plan_alias_rollback("none"); }), "no alias is named 'none'"));
}

TEST_CASE("registry: a rollback serves the previous set and refuses to strand an alias") {
  OpRegistry r;
  accept_builtins(r);
  CHECK(contains(failure_of([&] { (void)r.plan_rollback(); }), "no previous generation"));
  Served one;
  one.units["a.cu"] = unit({"a"});
  apply(r, one, 1);
  Served two = r.serving();
  two.units["b.cu"] = unit({"b"});
  apply(r, two, 2);
  const std::uint32_t b = *r.live_id("b");
  CHECK(r.plan_rollback() == std::vector<std::uint32_t>{b});
  r.commit_alias("al", r.plan_alias("al", "b"), false);
  CHECK(contains(failure_of([&] { (void)r.plan_rollback(); }), "the previous generation lacks operator id"));
  r.commit_alias("al", r.plan_alias("al", "a"), false);
  CHECK(r.plan_rollback() == std::vector<std::uint32_t>{b});
  r.commit_rollback();
  CHECK_FALSE(r.serving().units.contains("b.cu"));
  CHECK(r.live_id("a").has_value());
}

TEST_CASE("registry: ids run out before the heap's reserved id") {
  OpRegistry r;
  accept_builtins(r);
  Served s;
  std::vector<std::string> names;
  for (std::uint32_t i = GPUOS_BUILTIN_OP_COUNT; i < GPUOS_OP_HEAP_CTL; ++i) names.push_back("op" + std::to_string(i));
  s.units["many.cu"] = unit(names);
  apply(r, s, 1);
  Served more = r.serving();
  more.units["one.cu"] = unit({"extra"});
  CHECK(contains(failure_of([&] { (void)r.plan(more, "one.cu"); }), "no free operator id for 'extra'"));
  CHECK(contains(failure_of([&] { (void)r.plan_alias("al", "op7"); }), "no free operator id for alias"));
}

TEST_CASE("registry: rows list built-ins, loaded operators, aliases and failed sources with counts") {
  OpRegistry r;
  accept_builtins(r);
  Served s;
  s.units["a.cu"] = unit({"scale"});
  apply(r, s, 1);
  r.commit_alias("fast", r.plan_alias("fast", "scale"), false);
  r.set_error("broken.cu", "broken.cu:3: error: oops");
  r.set_error("a.cu", "a.cu:1: error: a later edit");
  const auto rows = r.rows([](std::uint32_t id, std::uint64_t& c, std::uint64_t& f) {
    c = 100 + id;
    f = id;
  });
  REQUIRE(rows.size() == GPUOS_BUILTIN_OP_COUNT + 3);
  CHECK(std::string(rows[GPUOS_OP_ADD].name) == "add");
  CHECK(rows[GPUOS_OP_ADD].kind == GPUOS_OP_KIND_BUILTIN);
  CHECK(rows[GPUOS_OP_ADD].completed == 100 + GPUOS_OP_ADD);
  const gpuos_op_info& loaded = rows[GPUOS_BUILTIN_OP_COUNT];
  CHECK(std::string(loaded.name) == "scale");
  CHECK(std::string(loaded.source) == "a.cu");
  CHECK(std::string(loaded.error) == "a.cu:1: error: a later edit");  // the serving version stays listed
  const gpuos_op_info& alias = rows[GPUOS_BUILTIN_OP_COUNT + 1];
  CHECK(alias.kind == GPUOS_OP_KIND_ALIAS);
  CHECK(alias.target == loaded.id);
  const gpuos_op_info& failed = rows[GPUOS_BUILTIN_OP_COUNT + 2];
  CHECK(failed.kind == GPUOS_OP_KIND_FAILED);
  CHECK(failed.id == UINT32_MAX);
  CHECK(std::string(failed.source) == "broken.cu");
}

TEST_CASE("accept table: ids past the table are refused") {
  AcceptTable t;
  CHECK_FALSE(t.accepts(GPUOS_MAX_OPS));
  CHECK_FALSE(t.accepts(0xFFFFu));
  t.accept(3, 0);
  CHECK(t.arg_bytes(3) == 0u);  // accepted with no arguments is not "unknown"
  t.refuse(3);
  CHECK_FALSE(t.accepts(3));
}
