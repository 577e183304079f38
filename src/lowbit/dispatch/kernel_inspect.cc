#include "lowbit/dispatch/kernel_inspect.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>

#include "lowbit/common/error.h"

namespace lowbit {
namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

void erase_all(std::string& s, std::string_view what) {
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p)) s.erase(p, what.size());
}

std::string on_path(const std::string& exe) {
  const char* path = std::getenv("PATH");
  std::string_view rest = path ? path : "/usr/bin:/bin";
  while (!rest.empty()) {
    const size_t colon = rest.find(':');
    std::string dir(rest.substr(0, colon));
    rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
    if (dir.empty()) continue;
    std::string full = dir + "/" + exe;
    if (::access(full.c_str(), X_OK) == 0) return full;
  }
  return "";
}

// ELF e_machine (0 if unreadable): 62 = x86-64, 183 = AArch64.
int elf_machine(const std::string& binary) {
  std::ifstream f(binary, std::ios::binary);
  unsigned char h[20] = {};
  if (!f.read(reinterpret_cast<char*>(h), sizeof h) || h[0] != 0x7f || h[1] != 'E' || h[2] != 'L' || h[3] != 'F')
    return 0;
  return h[5] == 1 ? h[18] | h[19] << 8 : h[19] | h[18] << 8;  // EI_DATA: 1 = little endian
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Branches whose `addr <sym>` operand may name another function (call, tail call).
bool is_branch(std::string_view m) {
  return m[0] == 'j' || starts_with(m, "call") || m == "b" || m == "bl" || starts_with(m, "b.") || m == "cbz" ||
         m == "cbnz" || m == "tbz" || m == "tbnz";
}

}  // namespace

int key_instruction_index(std::string_view m) {
  if (starts_with(m, "vfmadd") && ends_with(m, "ps")) return 0;
  if (m == "smlal2") return 5;
  for (size_t i = 1; i < kKeyInstructions.size(); ++i)
    if (m == kKeyInstructions[i]) return static_cast<int>(i);
  return -1;
}

int64_t KernelInspection::count(std::string_view key) const {
  for (size_t i = 0; i < kKeyInstructions.size(); ++i)
    if (kKeyInstructions[i] == key) return counts[i];
  return 0;
}

std::string normalize_symbol(std::string_view demangled) {
  std::string s(demangled);
  erase_all(s, "(anonymous namespace)::");
  erase_all(s, "lowbit::");
  // The return type ends at the last top-level space before the parameter list.
  int depth = 0;
  size_t name_begin = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '<' || c == '[') ++depth;
    else if ((c == '>' || c == ']') && depth > 0) --depth;
    else if (c == '(' && depth == 0) break;
    else if (c == ' ' && depth == 0) name_begin = i + 1;
  }
  return s.substr(name_begin);
}

std::string self_binary_path() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw Error("cannot resolve /proc/self/exe: " + ec.message());
  return p.string();
}

std::string find_objdump(const std::string& binary) {
  // An AArch64 binary may be inspected on an x86-64 machine (or run there under qemu-aarch64, whose
  // popen starts the machine's own tools): the plain objdump would not know the architecture.
  if (elf_machine(binary) == 183)
    if (std::string cross = on_path("aarch64-linux-gnu-objdump"); !cross.empty()) return cross;
  return on_path("objdump");
}

Disassembly Disassembly::load(const std::string& binary_arg) {
  const std::string binary = binary_arg.empty() ? self_binary_path() : binary_arg;
  if (!std::filesystem::exists(binary)) throw Error("cannot disassemble '" + binary + "': no such file");
  const std::string objdump = find_objdump(binary);
  if (objdump.empty()) throw Error("objdump not found on PATH (install binutils) to disassemble '" + binary + "'");
  const std::string cmd = shell_quote(objdump) + " -d -C --no-show-raw-insn " + shell_quote(binary) + " 2>/dev/null";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(cmd.c_str(), "r"), ::pclose);
  if (!pipe) throw Error("cannot run " + objdump);
  std::string text;
  char buf[1 << 16];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, pipe.get())) > 0;) text.append(buf, n);
  const int status = ::pclose(pipe.release());
  if (status != 0 || text.empty())
    throw Error(objdump + " failed on '" + binary + "' (exit status " + std::to_string(status) + ")");
  Disassembly d = parse(text);
  d.binary_ = binary;
  return d;
}

Disassembly Disassembly::parse(std::string_view text) {
  Disassembly d;
  Function* cur = nullptr;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (line.empty()) continue;
    // Function header: "0000000000117ae0 <void lowbit::f<1>(int)>:"
    if (line[0] != ' ' && ends_with(line, ">:")) {
      const size_t lt = line.find(" <");
      if (lt == std::string_view::npos) continue;
      const std::string_view raw = line.substr(lt + 2, line.size() - lt - 4);
      Function f;
      f.name = normalize_symbol(raw);
      f.in_lowbit = raw.find("lowbit::") != std::string_view::npos;
      d.by_addr_.push_back({std::strtoull(std::string(line.substr(0, lt)).c_str(), nullptr, 16), d.fns_.size()});
      d.fns_.push_back(std::move(f));
      cur = &d.fns_.back();
      continue;
    }
    // Instruction: "  117b32:\tvpdpbusd %ymm1,%ymm2,%ymm0" (Intel/AT&T and AArch64 alike).
    const size_t tab = line.find('\t');
    if (!cur || tab == std::string_view::npos || line.substr(0, tab).find(':') == std::string_view::npos) continue;
    std::string_view ins = line.substr(tab + 1);
    // Pseudo-prefixes and real prefixes before the mnemonic.
    std::string_view mnem;
    for (;;) {
      const size_t b = ins.find_first_not_of(' ');
      if (b == std::string_view::npos) break;
      ins = ins.substr(b);
      const size_t e = ins.find_first_of(" \t");
      mnem = ins.substr(0, e);
      ins = e == std::string_view::npos ? std::string_view() : ins.substr(e);
      const bool prefix = (mnem.size() > 2 && mnem.front() == '{' && mnem.back() == '}') || mnem == "lock" ||
                          mnem == "rep" || mnem == "repz" || mnem == "repnz" || mnem == "notrack" || mnem == "bnd" ||
                          mnem == "data16" || mnem == "addr32" || mnem == "cs" || mnem == "ds";
      if (!prefix) break;
      mnem = {};
    }
    if (mnem.empty() || mnem == "(bad)") continue;
    ++cur->instructions;
    if (int k = key_instruction_index(mnem); k >= 0) ++cur->counts[static_cast<size_t>(k)];
    // "call 10e120 <f>" names another function; "jmp 10e1a0 <f+0x80>" stays inside one. A
    // function address loaded for an indirect call ("lea 0x..(%rip),%rax  # 10e120 <f>", as
    // `(cond ? f<1> : f<2>)(...)` compiles) counts too; data addresses name no function.
    if (!ends_with(ins, ">")) continue;
    const size_t hash = ins.find("# ");
    if (hash == std::string_view::npos && !is_branch(mnem)) continue;
    std::string_view ref = hash == std::string_view::npos ? ins : ins.substr(hash + 2);
    const size_t lt = ref.find(" <");
    if (lt == std::string_view::npos) continue;
    const std::string_view target = ref.substr(lt + 2, ref.size() - lt - 3);
    if (target.find("+0x") != std::string_view::npos || target.find("@plt") != std::string_view::npos) continue;
    cur->callees.push_back(std::strtoull(std::string(ref.substr(0, lt)).c_str(), nullptr, 16));
  }
  std::sort(d.by_addr_.begin(), d.by_addr_.end());
  return d;
}

KernelInspection Disassembly::inspect(const KernelCandidate& c) const {
  KernelInspection r;
  r.candidate = c.name;
  r.ukernels = c.ukernels;
  if (c.ukernels.empty()) {
    r.error = "no micro-kernels named (portable C++ candidate)";
    return r;
  }
  std::vector<bool> taken(fns_.size(), false);
  std::vector<size_t> work;
  for (size_t i = 0; i < fns_.size(); ++i) {
    const std::string& n = fns_[i].name;
    for (const std::string& u : c.ukernels)
      if (starts_with(n, u) && (n.size() == u.size() || n[u.size()] == '<' || n[u.size()] == '(')) {
        taken[i] = true;
        work.push_back(i);
        break;
      }
  }
  if (work.empty()) {
    r.error = "symbol not found: stripped binary?";
    return r;
  }
  // Out-of-line helpers the micro-kernels call, tail-call or take the address of are their machine code too.
  for (size_t w = 0; w < work.size(); ++w)
    for (uint64_t a : fns_[work[w]].callees) {
      auto it = std::lower_bound(by_addr_.begin(), by_addr_.end(), std::pair<uint64_t, size_t>{a, 0});
      if (it == by_addr_.end() || it->first != a) continue;
      if (!taken[it->second] && fns_[it->second].in_lowbit) {
        taken[it->second] = true;
        work.push_back(it->second);
      }
    }
  for (size_t i : work) {
    const Function& f = fns_[i];
    r.functions.push_back(f.name);
    r.instructions += f.instructions;
    for (size_t k = 0; k < r.counts.size(); ++k) r.counts[k] += f.counts[k];
  }
  return r;
}

}  // namespace lowbit
