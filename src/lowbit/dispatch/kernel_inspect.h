#pragma once
// Instruction-level inspection of kernel candidates: disassembles a binary (objdump, once) and
// counts, per candidate, the key SIMD instructions in the machine code of its micro-kernels
// (KernelCandidate::ukernels). `lowbit inspect --kernels` prints it; tests/kernel_inspect_test.cc
// uses it to prove that every ISA-specific kernel really contains its signature instructions.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lowbit/dispatch/registry.h"

namespace lowbit {

// Counted mnemonics. "vfmadd231ps" counts every packed-single FMA form (vfmadd132ps, ...213ps,
// ...231ps, vfmaddsub...ps); "smlal" counts smlal and smlal2. Scalar forms (vfmadd231ss) are not
// counted: they are what vectorised code must not be.
inline constexpr std::array<std::string_view, 11> kKeyInstructions = {
    "vfmadd231ps", "vpmaddubsw", "vpmaddwd", "vpdpbusd", "fmla", "smlal", "sdot",
    "vpshufb", "vpopcntq", "cnt",  // these three: the binary kernels' popcounts (kernels/qb1-gemm)
    "sadalp"};                     // NEON depthwise's pairwise accumulate (kernels/qu8-dwconv/neon.cc)

struct KernelInspection {
  std::string candidate;                 // KernelCandidate::name
  std::vector<std::string> ukernels;     // the names searched for
  std::vector<std::string> functions;    // matched functions (normalised names), callees included
  std::array<int64_t, kKeyInstructions.size()> counts{};  // indexed like kKeyInstructions
  int64_t instructions = 0;              // all instructions of the matched functions
  std::string error;                     // "" when found, else why not ("symbol not found: stripped binary?")

  int64_t count(std::string_view key) const;  // by a kKeyInstructions name; 0 for others
  bool found() const { return error.empty(); }
};

// The whole binary's functions with their instruction counts, from one objdump run.
class Disassembly {
 public:
  // Runs objdump over `binary` ("" = this executable). Throws lowbit::Error when no objdump is
  // installed or it fails.
  static Disassembly load(const std::string& binary = "");
  // Parses objdump -d -C output (exposed for tests).
  static Disassembly parse(std::string_view objdump_text);

  // Sums the functions whose normalised name starts with one of c.ukernels (up to a '<', '(' or
  // the end), plus the lowbit functions they call, tail-call or load the address of (helpers the
  // compiler kept out of line, transitively). A candidate without ukernels, or whose ukernels
  // match nothing, gets an error, never zero counts.
  KernelInspection inspect(const KernelCandidate& c) const;
  size_t function_count() const { return fns_.size(); }
  const std::string& binary() const { return binary_; }

 private:
  struct Function {
    std::string name;  // normalised (see normalize_symbol)
    bool in_lowbit = false;
    int64_t instructions = 0;
    std::array<int64_t, kKeyInstructions.size()> counts{};
    std::vector<uint64_t> callees;  // functions it calls, jumps to or takes the address of
  };
  std::vector<Function> fns_;
  std::vector<std::pair<uint64_t, size_t>> by_addr_;  // sorted start address -> index into fns_
  std::string binary_;
};

// The running executable's path (/proc/self/exe resolved).
std::string self_binary_path();
// The objdump able to disassemble `binary` (aarch64-linux-gnu-objdump for an AArch64 ELF on
// another host, when installed; else objdump), or "" when none is on PATH.
std::string find_objdump(const std::string& binary);
// A demangled symbol without `lowbit::`, `(anonymous namespace)::` and its return type:
// "void lowbit::(anonymous namespace)::f<1, 16>(int) [clone .cold]" -> "f<1, 16>(int) [clone .cold]".
std::string normalize_symbol(std::string_view demangled);
// Key-instruction index of a mnemonic (kKeyInstructions), or -1.
int key_instruction_index(std::string_view mnemonic);

}  // namespace lowbit
