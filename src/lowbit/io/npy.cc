#include "lowbit/io/npy.h"

#include <cstring>
#include <fstream>
#include <iterator>
#include <regex>

#include "lowbit/common/error.h"

namespace lowbit {
namespace {

const char* descr_of(DType t) {
  switch (t) {
    case DType::f32: return "<f4";
    case DType::i64: return "<i8";
    case DType::i32: return "<i4";
    case DType::u8: return "|u1";
    case DType::i8: return "|i1";
    case DType::boolean: return "|b1";
    default: throw Error(std::string("cannot save ") + dtype_name(t) + " as .npy");
  }
}

}  // namespace

Tensor load_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("cannot open '" + path + "'");
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto bad = [&](const std::string& why) { return Error("'" + path + "' is not a valid .npy file: " + why); };
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) throw bad("missing magic");
  int major = static_cast<uint8_t>(bytes[6]);
  size_t hlen, hstart;
  if (major == 1) {
    hlen = static_cast<uint8_t>(bytes[8]) | (static_cast<size_t>(static_cast<uint8_t>(bytes[9])) << 8);
    hstart = 10;
  } else {
    if (bytes.size() < 12) throw bad("truncated header");
    hlen = 0;
    for (int i = 0; i < 4; ++i) hlen |= static_cast<size_t>(static_cast<uint8_t>(bytes[8 + i])) << (8 * i);
    hstart = 12;
  }
  if (hstart + hlen > bytes.size()) throw bad("truncated header");
  std::string header = bytes.substr(hstart, hlen);
  std::smatch m;
  if (!std::regex_search(header, m, std::regex("'descr':\\s*'([^']+)'"))) throw bad("no descr");
  std::string descr = m[1];
  if (std::regex_search(header, std::regex("'fortran_order':\\s*True"))) throw bad("Fortran order unsupported");
  if (!std::regex_search(header, m, std::regex("'shape':\\s*\\(([^)]*)\\)"))) throw bad("no shape");
  Shape shape;
  std::string dims = m[1];
  static const std::regex kDigits("\\d+");
  for (std::sregex_iterator it(dims.begin(), dims.end(), kDigits), e; it != e; ++it) {
    if (it->str().size() > 18) throw bad("dimension " + it->str() + " too large");
    shape.push_back(std::stoll(it->str()));
  }
  const char* payload = bytes.data() + hstart + hlen;
  size_t avail = bytes.size() - hstart - hlen;
  const int64_t n = checked_num_elements(shape);  // the product may overflow: never trust it
  if (n < 0) throw bad("shape " + shape_str(shape) + " has more elements than a 64-bit count holds");
  auto need = [&](size_t elem) {
    if (static_cast<uint64_t>(n) > avail / elem)
      throw bad("data truncated (" + std::to_string(avail) + " bytes for " + std::to_string(n) + " values)");
  };
  if (descr == "<f8") {
    need(8);
    Tensor t(DType::f32, shape);
    for (int64_t i = 0; i < n; ++i) {
      double d;
      std::memcpy(&d, payload + 8 * i, 8);
      t.data<float>()[i] = static_cast<float>(d);
    }
    return t;
  }
  DType dt;
  if (descr == "<f4") dt = DType::f32;
  else if (descr == "<i8") dt = DType::i64;
  else if (descr == "<i4") dt = DType::i32;
  else if (descr == "|u1") dt = DType::u8;
  else if (descr == "|i1") dt = DType::i8;
  else if (descr == "|b1") dt = DType::boolean;
  else throw bad("unsupported dtype '" + descr + "' (use float32)");
  need(static_cast<size_t>(bit_width(dt) / 8));
  Tensor t(dt, shape);
  std::memcpy(t.raw(), payload, static_cast<size_t>(t.nbytes()));
  return t;
}

void save_npy(const std::string& path, const Tensor& t) {
  std::string shape;
  for (int64_t d : t.shape()) shape += std::to_string(d) + ",";
  if (t.shape().size() > 1) shape.pop_back();
  std::string header = std::string("{'descr': '") + descr_of(t.dtype()) + "', 'fortran_order': False, 'shape': (" +
                       shape + "), }";
  size_t total = 10 + header.size() + 1;
  header += std::string((64 - total % 64) % 64, ' ') + "\n";
  std::ofstream f(path, std::ios::binary);
  if (!f) throw Error("cannot write '" + path + "'");
  uint16_t hl = static_cast<uint16_t>(header.size());
  f.write("\x93NUMPY\x01\x00", 8);
  f.put(static_cast<char>(hl & 0xff));
  f.put(static_cast<char>(hl >> 8));
  f << header;
  f.write(static_cast<const char*>(t.raw()), t.nbytes());
  if (!f) throw Error("failed writing '" + path + "'");
}

}  // namespace lowbit
