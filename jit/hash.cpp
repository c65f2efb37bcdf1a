#include "jit/hash.hpp"

// The vendored single-header library, every function inlined into this translation unit.
#define XXH_INLINE_ALL
#include "jit/third_party/xxhash.h"

#include "common/error.hpp"

namespace gpuos::jit {

std::string Hash128::hex() const {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out(32, '0');
  for (int i = 0; i < 16; ++i) {
    out[15 - i] = digits[(hi >> (4 * i)) & 0xf];
    out[31 - i] = digits[(lo >> (4 * i)) & 0xf];
  }
  return out;
}

std::optional<Hash128> Hash128::from_hex(std::string_view s) {
  if (s.size() != 32) return std::nullopt;
  Hash128 h;
  for (std::size_t i = 0; i < 32; ++i) {
    const char c = s[i];
    unsigned v;
    if (c >= '0' && c <= '9') v = static_cast<unsigned>(c - '0');
    else if (c >= 'a' && c <= 'f') v = static_cast<unsigned>(c - 'a' + 10);
    else return std::nullopt;
    std::uint64_t& w = i < 16 ? h.hi : h.lo;
    w = (w << 4) | v;
  }
  return h;
}

Hash128 hash128(std::string_view bytes) {
  const XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
  return {h.low64, h.high64};
}

std::uint64_t hash64(std::string_view bytes) { return XXH3_64bits(bytes.data(), bytes.size()); }

struct Hasher::State {
  XXH3_state_t st;  // 64-byte aligned; operator new honours the alignment (C++17)
};

Hasher::Hasher() : s_(std::make_unique<State>()) {
  if (XXH3_128bits_reset(&s_->st) != XXH_OK)
    throw common::Failure(GPUOS_ERR_INTERNAL, "XXH3_128bits_reset failed");
}
Hasher::~Hasher() = default;

void Hasher::raw(const void* p, std::size_t n) {
  if (XXH3_128bits_update(&s_->st, p, n) != XXH_OK)
    throw common::Failure(GPUOS_ERR_INTERNAL, "XXH3_128bits_update failed");
}

Hasher& Hasher::add(std::string_view bytes) {
  add(static_cast<std::uint64_t>(bytes.size()));
  raw(bytes.data(), bytes.size());
  return *this;
}

Hasher& Hasher::add(std::uint64_t v) {
  unsigned char b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<unsigned char>(v >> (8 * i));  // fixed byte order
  raw(b, sizeof b);
  return *this;
}

Hasher& Hasher::add(const Hash128& h) { return add(h.lo).add(h.hi); }

Hash128 Hasher::digest() const {
  const XXH128_hash_t h = XXH3_128bits_digest(&s_->st);
  return {h.low64, h.high64};
}

}  // namespace gpuos::jit
