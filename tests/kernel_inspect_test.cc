// Instruction-level checks of the dispatch table: every SIMD candidate names micro-kernels that
// exist in the lowbit binary, and their machine code holds the ISA's signature instructions (an
// "avx512vnni" kernel that compiled to scalar or AVX2 code would pass every numeric test). The
// code is in the binary whatever the host runs, so nothing here depends on the host's ISA; rows of
// the other architecture (create == nullptr, not compiled in) are only checked for their names.
#include <gtest/gtest.h>

#include <filesystem>
#include <optional>

#include "lowbit/dispatch/kernel_inspect.h"
#include "lowbit/dispatch/table_qu8.h"

namespace lowbit {
namespace {

bool ends_with(const std::string& s, const std::string& p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

std::vector<const KernelCandidate*> simd_candidates() {
  static const std::vector<KernelCandidate> qu8 = qu8_candidates();
  std::vector<const KernelCandidate*> v;
  for (const KernelCandidate& c : all_candidates())
    if (!c.features.empty()) v.push_back(&c);
  for (const KernelCandidate& c : qu8)
    if (!c.features.empty()) v.push_back(&c);
  return v;
}

// The CLI binary (the kernels are linked into it as into this test binary, which stands in when
// the CLI was not built).
std::string inspected_binary() {
  const std::string cli = LOWBIT_BINARY_DIR "/lowbit";
  return std::filesystem::exists(cli) ? cli : self_binary_path();
}

const Disassembly& disassembly() {
  static const Disassembly d = Disassembly::load(inspected_binary());
  return d;
}

#define SKIP_WITHOUT_OBJDUMP() \
  if (find_objdump(inspected_binary()).empty()) GTEST_SKIP() << "objdump not installed (binutils)"

TEST(KernelInspect, NormalizesDemangledNames) {
  EXPECT_EQ(normalize_symbol("void lowbit::(anonymous namespace)::qu8_gemm_tile__avx2<6, 16>(unsigned long, "
                             "lowbit::Qu8GemmEpilogue const&)"),
            "qu8_gemm_tile__avx2<6, 16>(unsigned long, Qu8GemmEpilogue const&)");
  EXPECT_EQ(normalize_symbol("lowbit::f32_gemm_6x16__avx2(unsigned long) [clone .cold]"),
            "f32_gemm_6x16__avx2(unsigned long) [clone .cold]");
  EXPECT_EQ(normalize_symbol("std::vector<int, std::allocator<int> > lowbit::f<2>(int)"), "f<2>(int)");
  EXPECT_EQ(normalize_symbol("memcpy@plt"), "memcpy@plt");
}

TEST(KernelInspect, ClassifiesMnemonics) {
  EXPECT_EQ(key_instruction_index("vfmadd231ps"), 0);
  EXPECT_EQ(key_instruction_index("vfmadd213ps"), 0);
  EXPECT_EQ(key_instruction_index("vfmadd231ss"), -1);  // scalar
  EXPECT_EQ(key_instruction_index("vpdpbusd"), 3);
  EXPECT_EQ(key_instruction_index("vpdpbusds"), -1);  // saturating: not the exact kernels' instruction
  EXPECT_EQ(key_instruction_index("smlal2"), 5);
  EXPECT_EQ(key_instruction_index("vpaddd"), -1);
}

TEST(KernelInspect, ParsesObjdumpFollowsCallsAndReportsMissingSymbols) {
  const char* text =
      "\nDisassembly of section .text:\n\n"
      "0000000000001000 <lowbit::k__avxvnni(unsigned long)>:\n"
      "    1000:\t{vex} vpdpbusd %ymm1,%ymm2,%ymm0\n"
      "    1005:\tjne    1000 <lowbit::k__avxvnni(unsigned long)+0x0>\n"
      "    1007:\tcall   1100 <void lowbit::(anonymous namespace)::helper<8>(int)>\n"
      "    100c:\tcall   1200 <memcpy@plt>\n"
      "    1011:\tlea    0x2e8(%rip),%rax        # 1300 <void lowbit::(anonymous namespace)::plane<1>(int)>\n"
      "    1018:\tlea    0x2e8(%rip),%rcx        # 5000 <lowbit::(anonymous namespace)::table>\n"
      "    101f:\tjmp    *%rax\n\n"
      "0000000000001100 <void lowbit::(anonymous namespace)::helper<8>(int)>:\n"
      "    1100:\tvfmadd231ps %ymm1,%ymm2,%ymm0\n"
      "    1105:\tvfmadd132ps %ymm1,%ymm2,%ymm0\n"
      "    110a:\tret\n\n"
      "0000000000001200 <lowbit::k__avxvnni_other(int)>:\n"
      "    1200:\tvpdpbusd %ymm1,%ymm2,%ymm0\n\n"
      "0000000000001300 <void lowbit::(anonymous namespace)::plane<1>(int)>:\n"
      "    1300:\tvfmadd213ps %ymm1,%ymm2,%ymm0\n";
  const Disassembly d = Disassembly::parse(text);
  EXPECT_EQ(d.function_count(), 4u);
  KernelCandidate c;
  c.name = "test";
  c.ukernels = {"k__avxvnni"};  // a prefix up to '(' or '<': k__avxvnni_other does not match
  KernelInspection r = d.inspect(c);
  ASSERT_TRUE(r.found()) << r.error;
  // The kernel, the helper it calls and the one it calls through a loaded address (not memcpy,
  // not the data symbol).
  EXPECT_EQ(r.functions.size(), 3u);
  EXPECT_EQ(r.count("vpdpbusd"), 1);
  EXPECT_EQ(r.count("vfmadd231ps"), 3);
  EXPECT_EQ(r.instructions, 11);
  c.ukernels = {"absent__avx2"};
  r = d.inspect(c);
  EXPECT_FALSE(r.found());
  EXPECT_EQ(r.error, "symbol not found: stripped binary?");
}

TEST(KernelInspect, EveryMicroKernelNameCarriesItsCandidatesIsa) {
  for (const KernelCandidate* c : simd_candidates()) {
    ASSERT_FALSE(c->ukernels.empty()) << c->name << " names no micro-kernels";
    const std::string isa = c->name.substr(c->name.rfind('-') + 1);  // "...-avx512vnni"
    for (const std::string& u : c->ukernels) EXPECT_TRUE(ends_with(u, "__" + isa)) << c->name << ": " << u;
  }
}

TEST(KernelInspect, EverySimdCandidateIsFoundAndNotScalar) {
  SKIP_WITHOUT_OBJDUMP();
  const Disassembly& d = disassembly();
  for (const KernelCandidate* c : simd_candidates()) {
    if (!c->create) continue;
    const KernelInspection r = d.inspect(*c);
    ASSERT_TRUE(r.found()) << c->name << ": " << r.error << " in " << d.binary();
    EXPECT_GE(r.functions.size(), c->ukernels.size()) << c->name;
    EXPECT_GE(r.instructions, 40) << c->name << " has almost no machine code";
  }
}

TEST(KernelInspect, IsaKernelsContainTheirSignatureInstructions) {
  SKIP_WITHOUT_OBJDUMP();
  const Disassembly& d = disassembly();
  int checked = 0;
  for (const KernelCandidate* c : simd_candidates()) {
    if (!c->create) continue;
    const KernelInspection r = d.inspect(*c);
    ASSERT_TRUE(r.found()) << c->name << ": " << r.error;
    const bool f32 = c->name.starts_with("f32-"), qu8 = c->name.starts_with("qu8-");
    if (f32 && (ends_with(c->name, "-avx2") || ends_with(c->name, "-avx512")) &&
        (c->op == "Conv" || c->op == "Gemm" || c->op == "MatMul")) {
      EXPECT_GT(r.count("vfmadd231ps"), 0) << c->name << ": no packed fp32 FMA";
      ++checked;
    }
    const bool binary = c->name.find("-qb1w-conv2d-xnor-") != std::string::npos;
    if (binary) {
      // XOR-popcount: the nibble table on AVX2, vpopcntq on AVX-512, cnt on NEON (qb1-gemm/README.md).
      const char* key = ends_with(c->name, "-avx2") ? "vpshufb" : ends_with(c->name, "-neon") ? "cnt" : "vpopcntq";
      EXPECT_GT(r.count(key), 0) << c->name << ": no " << key;
      ++checked;
    }
    if (c->subbyte() && !binary && ends_with(c->name, "-avx2")) {
      // Sub-byte codes bound the products, which is what makes vpmaddubsw exact (qsub-gemm/README.md).
      EXPECT_GT(r.count("vpmaddubsw"), 0) << c->name << ": no vpmaddubsw";
      ++checked;
    }
    if (qu8 && !c->subbyte() && ends_with(c->name, "-avx2") && (c->op == "QConv" || c->op == "QGemm")) {
      EXPECT_GT(r.count("vpmaddwd"), 0) << c->name << ": no vpmaddwd";
      // The exactness design: vpmaddubsw saturates int16 (255 * 127 * 2 > 32767).
      EXPECT_EQ(r.count("vpmaddubsw"), 0) << c->name << " uses saturating vpmaddubsw";
      ++checked;
    }
    if (ends_with(c->name, "-avx512vnni") || ends_with(c->name, "-avxvnni")) {
      EXPECT_GT(r.count("vpdpbusd"), 0) << c->name << ": no vpdpbusd";
      ++checked;
    }
    // Sigmoid by a polynomial of fused multiply-adds (kernels/f32-velementwise).
    if (c->name.starts_with("f32-vsigmoid-") || c->name.starts_with("f32-vsilu-")) {
      const char* key = ends_with(c->name, "-neon") ? "fmla" : "vfmadd231ps";
      EXPECT_GT(r.count(key), 0) << c->name << ": no " << key;
      ++checked;
    }
    // fp32 convs and matmuls (not the input of a binary conv: signs, no FMA; nor element-wise ops).
    if (f32 && ends_with(c->name, "-neon") && !binary && (c->op == "Conv" || c->op == "Gemm" || c->op == "MatMul")) {
      EXPECT_GT(r.count("fmla"), 0) << c->name << ": no fmla";
      ++checked;
    }
    if (qu8 && ends_with(c->name, "-neon") && (c->op == "QConv" || c->op == "QGemm")) {
      // Depthwise multiplies int16 pairs in int16 and adds them pairwise (qu8-dwconv/neon.cc).
      const char* key = c->name.find("dwconv") != std::string::npos ? "sadalp" : "smlal";
      EXPECT_GT(r.count(key), 0) << c->name << ": no " << key;
      ++checked;
    }
    if (ends_with(c->name, "-neondot")) {
      EXPECT_GT(r.count("sdot"), 0) << c->name << ": no sdot";
      ++checked;
    }
  }
#if defined(__aarch64__)
  EXPECT_GE(checked, 6);  // fp32 conv, gemm, matmul (fmla); qu8 igemm and gemv (smlal), igemm (sdot)
#else
  EXPECT_GE(checked, 8);  // 4 fp32 gemm/conv, 2 qu8 AVX2 conv + gemv, 2 VNNI igemm (at least)
#endif
}

}  // namespace
}  // namespace lowbit
