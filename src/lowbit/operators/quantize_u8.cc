// QuantizeLinear / DequantizeLinear drivers: per-tensor scale and zero point (read at run time, so
// they may be graph inputs too), split into chunks for the pool (elementwise: any split gives the
// same bytes). Per-axis scales and i8 stay with the reference. One driver for every ISA: the
// kernel is a function of kernels/qu8-quantize (AVX2 on x86-64, NEON on AArch64).
#include "lowbit/operators/quantize_u8.h"

#include <algorithm>

#include "lowbit/kernels/qu8-quantize/qu8_quantize.h"
#include "lowbit/operators/operator_util.h"

namespace lowbit {
namespace {

constexpr int64_t kChunk = 16384;

int32_t zero_point(std::span<const TensorView> in) { return in.size() > 2 && in[2].data ? in[2].as<uint8_t>()[0] : 0; }

class QuantizeU8 final : public Kernel {
 public:
  QuantizeU8(const NodeContext& ctx, Qu8QuantizeFn fn) : fn_(fn), qmax_(code_range(ctx.out(0)).hi) {}
  void run(std::span<const TensorView> in, std::span<const TensorView> out, ThreadPool& pool) const override {
    const float* x = in[0].as<float>();
    const float scale = in[1].as<float>()[0];
    const int32_t zp = zero_point(in);
    uint8_t* y = out[0].as<uint8_t>();
    const int64_t n = out[0].numel();
    pool.parallel_for(ops::ceil_div(n, kChunk), [&](int64_t t, int) {
      const int64_t i0 = t * kChunk;
      fn_(static_cast<size_t>(std::min(kChunk, n - i0)), x + i0, scale, zp, qmax_, y + i0);
    });
  }

 private:
  Qu8QuantizeFn fn_;
  int32_t qmax_;
};

class DequantizeU8 final : public Kernel {
 public:
  explicit DequantizeU8(Qu8DequantizeFn fn) : fn_(fn) {}
  void run(std::span<const TensorView> in, std::span<const TensorView> out, ThreadPool& pool) const override {
    const uint8_t* x = in[0].as<uint8_t>();
    const float scale = in[1].as<float>()[0];
    const int32_t zp = zero_point(in);
    float* y = out[0].as<float>();
    const int64_t n = out[0].numel();
    pool.parallel_for(ops::ceil_div(n, kChunk), [&](int64_t t, int) {
      const int64_t i0 = t * kChunk;
      fn_(static_cast<size_t>(std::min(kChunk, n - i0)), x + i0, scale, zp, y + i0);
    });
  }

 private:
  Qu8DequantizeFn fn_;
};

// "" when input 1 (scale) is one f32 and input 2 (zero point), if present, one u8.
std::string check_params(const NodeContext& ctx) {
  if (ctx.in(1).dtype != DType::f32) return std::string("scale dtype ") + dtype_name(ctx.in(1).dtype) + ", needs f32";
  if (num_elements(ctx.in(1).shape) != 1)
    return "scale has " + std::to_string(num_elements(ctx.in(1).shape)) + " values, needs 1 (per tensor)";
  if (ctx.has_input(2)) {
    if (ctx.in(2).dtype != DType::u8)
      return std::string("zero point dtype ") + dtype_name(ctx.in(2).dtype) + ", needs u8";
    if (num_elements(ctx.in(2).shape) != 1)
      return "zero point has " + std::to_string(num_elements(ctx.in(2).shape)) + " values, needs 1 (per tensor)";
  }
  return "";
}

}  // namespace

std::string check_quantize_u8(const NodeContext& ctx) {
  if (ctx.in(0).dtype != DType::f32) return std::string("input dtype ") + dtype_name(ctx.in(0).dtype) + ", needs f32";
  if (ctx.out(0).dtype != DType::u8) return std::string("output dtype ") + dtype_name(ctx.out(0).dtype) + ", needs u8";
  return check_params(ctx);
}

std::string check_dequantize_u8(const NodeContext& ctx) {
  if (ctx.in(0).dtype != DType::u8) return std::string("input dtype ") + dtype_name(ctx.in(0).dtype) + ", needs u8";
  if (ctx.out(0).dtype != DType::f32) return std::string("output dtype ") + dtype_name(ctx.out(0).dtype) + ", needs f32";
  return check_params(ctx);
}

#if defined(__x86_64__)
std::unique_ptr<Kernel> create_quantize_u8_avx2(const NodeContext& ctx) {
  return std::make_unique<QuantizeU8>(ctx, qu8_quantize__avx2);
}
std::unique_ptr<Kernel> create_dequantize_u8_avx2(const NodeContext&) {
  return std::make_unique<DequantizeU8>(qu8_dequantize__avx2);
}
#elif defined(__aarch64__)
std::unique_ptr<Kernel> create_quantize_u8_neon(const NodeContext& ctx) {
  return std::make_unique<QuantizeU8>(ctx, qu8_quantize__neon);
}
std::unique_ptr<Kernel> create_dequantize_u8_neon(const NodeContext&) {
  return std::make_unique<DequantizeU8>(qu8_dequantize__neon);
}
#endif

}  // namespace lowbit
