#pragma once
// The study lowbit answers (../shared/design, "TVM Quantization: Why INT8 ResNet50 Ran 2.28x Slower
// Than FP32 on x86", UIUC SRSE 2026): its published figures, so that `lowbit report` prints each
// beside lowbit's measurement of the same experiment. ResNet-50 (torchvision), batch 1, TVM
// v0.15.0, opt_level=3, untuned schedules, 100 timed runs, means.
namespace lowbit::study {

inline constexpr const char* kSource =
    "TVM v0.15.0 relay.quantize, ResNet-50 batch 1, untuned (the study: UIUC SRSE 2026, D. Pesic)";
inline constexpr double kX86Fp32Ms = 166.6, kX86Int8Ms = 379.9;          // plain llvm target: 2.28x slower
inline constexpr double kQemuA72Fp32Ms = 9550.5, kQemuA72Int8Ms = 4619.2;  // QEMU virt, Cortex-A72: 2.07x faster
inline constexpr double kFp32ParamsMB = 191.5, kInt8ParamsMB = 30.4;       // serialized .params: 6.30x
inline constexpr double kLogicalNbit4Ms = 419.1, kLogicalNbit2Ms = 403.7;  // nbit < 8 in int8 storage
inline constexpr double kLogicalNbit1Ms = 9.8;  // "degenerate": the graph constant-folds away
inline constexpr double kQemuScalarIntOverFp = 2.65;  // "integer MAC ~2.6-2.7x fp32 under QEMU TCG"
// What each native sub-byte width did.
inline constexpr const char* kInt4 = "relay.build never terminated (CPU-bound 29+ minutes, no diagnostic)";
inline constexpr const char* kInt2 = "InternalError in quantize (TIR buffer binding rejects 2-bit storage)";
inline constexpr const char* kInt1 = "InternalError in relay.build (SimplifyExpr: IntImm(int1, -1))";

}  // namespace lowbit::study
