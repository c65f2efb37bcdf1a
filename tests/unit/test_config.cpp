// The configuration table: one parser, one policy for malformed values, the docs generated from it.
#include <doctest/doctest.h>

#include <fstream>
#include <iterator>
#include <memory>
#include <map>
#include <string>

#include "common/config.hpp"
#include "common/error.hpp"
#include "host/device.hpp"

using namespace gpuos::common;

namespace {

std::function<const char*(const char*)> env(std::map<std::string, std::string> vars) {
  auto owned = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [owned](const char* name) -> const char* {
    auto it = owned->find(name);
    return it == owned->end() ? nullptr : it->second.c_str();
  };
}

std::string error_of(std::map<std::string, std::string> vars) {
  try {
    (void)Config::from_env(env(std::move(vars)));
  } catch (const Failure& f) {
    CHECK(f.status() == GPUOS_ERR_INVALID_ARG);
    return f.what();
  }
  return "";
}

}  // namespace

TEST_CASE("config: defaults are the table's") {
  const Config c = Config::from_env(env({}));
  CHECK(c.tile_batch == 32);
  CHECK(c.claim_spread == 64);
  CHECK(c.claim_ahead);
  CHECK(c.poll_pace_ns == 1200);
  CHECK_FALSE(c.trace);
  CHECK(c.ctx_sched == "driver");
  CHECK(c.carveout == "l1");
  CHECK(c.cache_max_bytes == 512ull << 20);
  CHECK(c.cache_dir.empty());
  CHECK(c.source_of("GPUOS_TILE_BATCH") == Source::default_value);
  for (const Row& r : rows()) CHECK(std::string(r.name).starts_with("GPUOS_"));
}

TEST_CASE("config: values of every kind are read") {
  const Config c = Config::from_env(env({{"GPUOS_TILE_BATCH", "8"},
                                         {"GPUOS_POLL_PACE", "off"},
                                         {"GPUOS_TRACE", "1"},
                                         {"GPUOS_CTX_SCHED", "yield"},
                                         {"GPUOS_CACHE_MAX_BYTES", "2G"},
                                         {"GPUOS_CACHE_DIR", "/tmp/c"},
                                         {"GPUOS_CLAIM_AHEAD", "0"}}));
  CHECK(c.tile_batch == 8);
  CHECK(c.poll_pace_ns == 0);
  CHECK(c.trace);
  CHECK(c.ctx_sched == "yield");
  CHECK(c.cache_max_bytes == 2ull << 30);
  CHECK(c.cache_dir == "/tmp/c");
  CHECK_FALSE(c.claim_ahead);
  CHECK(c.source_of("GPUOS_TILE_BATCH") == Source::environment);
  CHECK(c.source_of("GPUOS_CLAIM_SPREAD") == Source::default_value);
  // An empty value is the default.
  CHECK(Config::from_env(env({{"GPUOS_TILE_BATCH", ""}})).tile_batch == 32);
}

TEST_CASE("config: GPUOS_SM_BUDGET fills an SM budget the options leave 0, never one they set") {
  const Config c = Config::from_env(env({{"GPUOS_SM_BUDGET", "8"}}));
  gpuos_options o;
  gpuos_options_init(&o);
  CHECK(gpuos::detail::with_config_defaults(o, c).sm_budget == 8);
  o.sm_budget = 16;
  CHECK(gpuos::detail::with_config_defaults(o, c).sm_budget == 16);
  o.sm_budget = 0;
  CHECK(gpuos::detail::with_config_defaults(o, Config::from_env(env({{"GPUOS_SM_BUDGET", "all"}}))).sm_budget == 0);
  CHECK(gpuos::detail::with_config_defaults(o, Config::from_env(env({}))).sm_budget == 0);
}

TEST_CASE("config: a malformed value names the variable, the value and what it accepts") {
  CHECK(error_of({{"GPUOS_TILE_BATCH", "0"}}) == "GPUOS_TILE_BATCH must be an integer in [1, 64], got '0'");
  CHECK(error_of({{"GPUOS_TILE_BATCH", "65"}}) == "GPUOS_TILE_BATCH must be an integer in [1, 64], got '65'");
  CHECK(error_of({{"GPUOS_TILE_BATCH", "8x"}}) == "GPUOS_TILE_BATCH must be an integer in [1, 64], got '8x'");
  CHECK(error_of({{"GPUOS_POLL_PACE", "slow"}}) == "GPUOS_POLL_PACE must be an integer in [0, 4000] or off, got 'slow'");
  CHECK(error_of({{"GPUOS_TRACE", "yes"}}) == "GPUOS_TRACE must be 0 or 1, got 'yes'");
  CHECK(error_of({{"GPUOS_CTX_SCHED", "fast"}}) ==
        "GPUOS_CTX_SCHED must be one of driver, auto, spin, yield, blocking, got 'fast'");
  CHECK(error_of({{"GPUOS_CACHE_MAX_BYTES", "12Q"}}).starts_with("GPUOS_CACHE_MAX_BYTES must be a byte count"));
  CHECK(error_of({{"GPUOS_CACHE_MAX_BYTES", "1K"}}).starts_with("GPUOS_CACHE_MAX_BYTES must be a byte count"));
  CHECK(error_of({{"GPUOS_CACHE_MAX_BYTES", "99999999999999999999G"}}).starts_with("GPUOS_CACHE_MAX_BYTES"));
  CHECK(error_of({{"GPUOS_CARVEOUT", "default"}}) == "GPUOS_CARVEOUT must be one of l1, driver, got 'default'");
}

TEST_CASE("config: describe() writes every setting as its variable") {
  const auto lines = Config::from_env(env({{"GPUOS_TILE_BATCH", "4"}})).describe();
  CHECK(lines.size() == rows().size());
  CHECK(std::find(lines.begin(), lines.end(), "GPUOS_TILE_BATCH=4") != lines.end());
  CHECK(std::find(lines.begin(), lines.end(), "GPUOS_TRACE=0") != lines.end());
}

TEST_CASE("config: docs/configuration.md is generated from the table and current") {
  std::ifstream f(std::string(GPUOS_SOURCE_ROOT) + "/docs/configuration.md", std::ios::binary);
  REQUIRE_MESSAGE(f, "docs/configuration.md is missing: regenerate it with build/tools/gpuos config --markdown");
  const std::string doc{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  CHECK_MESSAGE(doc == markdown(),
                "docs/configuration.md differs from the configuration table: regenerate it with "
                "`build/tools/gpuos config --markdown > docs/configuration.md`");
  for (const Row& r : rows()) CHECK(doc.find(r.name) != std::string::npos);
}
