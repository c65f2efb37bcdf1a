// Single-copy-atomic 16-byte loads and stores between the host and the device.
//
// The ring's chunks and the completion records are 16 bytes that must be seen whole: a chunk's stamp
// with its words, a record's sequence number with its status. A 16-byte aligned SSE load or store is
// one access on x86-64, but an intrinsic is only a value to the compiler, which may split a copy through
// it into two 8-byte accesses (and did: a record's status read before its sequence number). The
// accesses are therefore written as inline assembly, one instruction each.
#ifndef GPUOS_COMMON_ATOMIC16_HPP
#define GPUOS_COMMON_ATOMIC16_HPP

#if !defined(__x86_64__)
#error "gpuos needs single-copy-atomic 16-byte accesses to mapped memory; only x86-64 is supported"
#endif

#include <immintrin.h>

namespace gpuos {

/// Stores the 16 bytes at `src` to `dst` (16-byte aligned) with one instruction.
inline void store16(void* dst, const void* src) {
  const __m128i v = _mm_loadu_si128(static_cast<const __m128i*>(src));
  asm volatile("movdqa %1, %0" : "=m"(*static_cast<__m128i*>(dst)) : "x"(v) : "memory");
}

/// Loads the 16 bytes at `src` (16-byte aligned) to `dst` with one instruction.
inline void load16(void* dst, const volatile void* src) {
  __m128i v;
  asm volatile("movdqa %1, %0" : "=x"(v) : "m"(*static_cast<const volatile __m128i*>(src)) : "memory");
  _mm_storeu_si128(static_cast<__m128i*>(dst), v);
}

}  // namespace gpuos

#endif  // GPUOS_COMMON_ATOMIC16_HPP
