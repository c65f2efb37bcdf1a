// Content hashes of the JIT layer: XXH3, 128 bits for cache keys and content identity, 64 bits for
// cache-file checksums. XXH3's output is fixed by its specification (stable across library versions),
// so keys stay valid from one build to the next. Not cryptographic: the cache is per user and trusts its
// own directory. The implementation is the upstream single header, vendored unchanged in third_party/
// (release 0.8.1, BSD-2-Clause), so that a build needs no package for it.
#pragma once

#include <compare>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace gpuos::jit {

struct Hash128 {
  std::uint64_t lo = 0;
  std::uint64_t hi = 0;

  friend constexpr auto operator<=>(const Hash128&, const Hash128&) = default;
  bool is_zero() const { return lo == 0 && hi == 0; }
  /// 32 lowercase hex digits, high word first.
  std::string hex() const;
  static std::optional<Hash128> from_hex(std::string_view s);
};

struct Hash128Hasher {
  std::size_t operator()(const Hash128& h) const noexcept { return static_cast<std::size_t>(h.lo ^ h.hi); }
};

Hash128 hash128(std::string_view bytes);
std::uint64_t hash64(std::string_view bytes);

/// Streaming 128-bit hash. Every add_* is framed (length-prefixed or fixed width), so different
/// sequences of fields never produce the same byte stream.
class Hasher {
 public:
  Hasher();
  ~Hasher();
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;

  Hasher& add(std::string_view bytes);  ///< length, then the bytes
  Hasher& add(std::uint64_t v);
  Hasher& add(const Hash128& h);
  Hash128 digest() const;

 private:
  void raw(const void* p, std::size_t n);
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace gpuos::jit
