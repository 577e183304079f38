#pragma once
// Sub-byte weight panels: 4- and 2-bit codes kept packed in memory, expanded per tile into the int8
// words the kg = 4 micro-kernels read (design: README.md next to this file).
//
// A panel block (the int8 driver's K block x MR channels: nkg x MR words of 4 codes) is the
// sequence of its int8 codes, cut into chunks of 64 codes; chunk c is stored in 64 * b / 8 bytes
// (b = 4: 32, b = 2: 16), code j of the chunk at bits [b * (j / S), + b) of byte j % S, S the
// chunk's byte count. So a 4-bit chunk's byte j holds codes j and j + 32, a 2-bit chunk's byte j
// codes j, j + 16, j + 32 and j + 48: expanding a chunk is S-byte-wide shifts and masks with no
// shuffle, as wide as any ISA's vectors. A block's last chunk is padded with zero codes.
//
// This is not ONNX's element order (the graph and the .lbm keep that: ir/codes.h); it is the
// kernel's own layout, built once when the kernel is created.
#include <cstddef>
#include <cstdint>

namespace lowbit {

inline constexpr int64_t kSubbyteChunkCodes = 64;

// Bytes of a block of `codes` int8 codes packed at `bits` (chunks padded to 64 codes).
inline constexpr int64_t subbyte_block_bytes(int64_t codes, int bits) {
  return (codes + kSubbyteChunkCodes - 1) / kSubbyteChunkCodes * kSubbyteChunkCodes * bits / 8;
}

// Packs n int8 codes (each within `bits` bits, two's complement) into subbyte_block_bytes(n, bits)
// bytes of dst.
inline void pack_subbyte_block(const int8_t* codes, int64_t n, int bits, uint8_t* dst) {
  const int64_t S = kSubbyteChunkCodes * bits / 8, per = 8 / bits;
  const uint32_t mask = (1u << bits) - 1u;
  for (int64_t c0 = 0; c0 < n; c0 += kSubbyteChunkCodes)
    for (int64_t j = 0; j < S; ++j) {
      uint32_t byte = 0;
      for (int64_t q = 0; q < per; ++q) {
        const int64_t i = c0 + q * S + j;
        const uint32_t v = i < n ? static_cast<uint32_t>(static_cast<uint8_t>(codes[i])) & mask : 0u;
        byte |= v << (bits * q);
      }
      *dst++ = static_cast<uint8_t>(byte);
    }
}

// Expands `chunks` chunks into 64 int8 codes each. Plain C++ that each ISA file compiles with its
// own flags (GCC vectorises the byte loop: shift, mask, and the sign extension (v ^ s) - s);
// internal linkage, so no ISA's copy can stand in for another's.
namespace {
// Codes Q of a chunk: bits [B * Q, + B) of each of its S bytes, sign-extended; a constant shift,
// so that GCC vectorises the byte loop (with the shift a loop variable, it went scalar).
template <int B, int Q>
inline void expand_subbyte_quarter(const uint8_t* __restrict src, int8_t* __restrict dst) {
  constexpr int S = static_cast<int>(kSubbyteChunkCodes) * B / 8;
  constexpr uint8_t mask = (1 << B) - 1, sign = 1 << (B - 1);
  for (int j = 0; j < S; ++j)
    dst[Q * S + j] = static_cast<int8_t>(static_cast<uint8_t>(((src[j] >> (B * Q)) & mask) ^ sign) - sign);
}
template <int B>
[[maybe_unused]] void expand_subbyte_chunks(const uint8_t* __restrict src, size_t chunks, int8_t* __restrict dst) {
  constexpr int S = static_cast<int>(kSubbyteChunkCodes) * B / 8;
  for (size_t c = 0; c < chunks; ++c, src += S, dst += kSubbyteChunkCodes) {
    expand_subbyte_quarter<B, 0>(src, dst);
    expand_subbyte_quarter<B, 1>(src, dst);
    if constexpr (B == 2) {
      expand_subbyte_quarter<B, 2>(src, dst);
      expand_subbyte_quarter<B, 3>(src, dst);
    }
  }
}
}  // namespace

}  // namespace lowbit

// Each ISA file names its own expanders (inside its anonymous namespace), so that `inspect
// --kernels` finds them by name and each is compiled with that file's flags.
#define LOWBIT_SUBBYTE_EXPANDERS(isa)                                                      \
  void qsub_expand_w4__##isa(const uint8_t* s, size_t n, int8_t* d) {                      \
    ::lowbit::expand_subbyte_chunks<4>(s, n, d);                                           \
  }                                                                                        \
  void qsub_expand_w2__##isa(const uint8_t* s, size_t n, int8_t* d) {                      \
    ::lowbit::expand_subbyte_chunks<2>(s, n, d);                                           \
  }
