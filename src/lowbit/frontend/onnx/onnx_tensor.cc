#include "lowbit/frontend/onnx/onnx_tensor.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>

#include "lowbit/common/error.h"

namespace lowbit {
namespace {

using TP = onnx::TensorProto;

float half_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: renormalise into an f32 normal
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while (!(mant & 0x400u));
      bits = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float bfloat16_to_float(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

std::string tensor_label(const TP& t) { return "tensor '" + (t.name().empty() ? std::string("<unnamed>") : t.name()) + "'"; }

// Bytes per element as stored in raw_data.
int raw_elem_bytes(int dt) {
  switch (dt) {
    case TP::FLOAT: case TP::INT32: return 4;
    case TP::INT64: case TP::DOUBLE: return 8;
    case TP::INT8: case TP::UINT8: case TP::BOOL: return 1;
    case TP::FLOAT16: case TP::BFLOAT16: return 2;
    default: return 0;
  }
}

// A decimal u64 and nothing else ("offset" and "length" of external data are strings).
std::optional<uint64_t> parse_u64(const std::string& s) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

}  // namespace

ExternalDataDir::ExternalDataDir(const std::string& model_path) : model_path_(model_path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path dir = fs::path(model_path).parent_path();
  if (dir.empty()) dir = ".";
  base_ = fs::canonical(dir, ec).string();
  if (ec) base_.clear();  // read() refuses every location
}

ExternalDataDir::Bytes ExternalDataDir::read(const std::string& location, uint64_t offset,
                                             std::optional<uint64_t> length) {
  namespace fs = std::filesystem;
  const std::string where = "external data '" + location + "'";
  const fs::path rel(location);
  if (location.empty()) throw Error("external data has no location");
  if (rel.is_absolute() || rel.has_root_name() || rel.has_root_directory())
    throw Error(where + " is an absolute path; lowbit reads external data from the model's folder only");
  for (const fs::path& part : rel)
    if (part == "..") throw Error(where + " climbs out of the model's folder with '..'");
  if (base_.empty()) throw Error(where + ": the folder of '" + model_path_ + "' cannot be resolved");
  auto it = mapped_.find(location);
  if (it == mapped_.end()) {
    std::error_code ec;
    const fs::path full = fs::canonical(fs::path(base_) / rel, ec);
    if (ec) throw Error(where + " cannot be opened next to '" + model_path_ + "': " + ec.message());
    const std::string f = full.string();
    const std::string prefix = base_.back() == '/' ? base_ : base_ + "/";
    if (f.size() <= prefix.size() || f.compare(0, prefix.size(), prefix) != 0)
      throw Error(where + " resolves to '" + f + "', outside the model's folder '" + base_ + "' (a symlink out)");
    // O_NOFOLLOW: the path was just resolved, so a symlink there now was swapped in since;
    // O_NONBLOCK: a FIFO must not hang the import before fstat says it is not a regular file.
    const int fd = ::open(f.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) throw Error(where + " cannot be opened: " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      throw Error(where + " is not a regular file");
    }
    Mapped m;
    m.size = static_cast<size_t>(st.st_size);
    if (m.size > 0) {
      void* p = ::mmap(nullptr, m.size, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p == MAP_FAILED) {
        ::close(fd);
        throw Error(where + " cannot be mapped: " + std::strerror(errno));
      }
      const size_t n = m.size;
      m.owner = std::shared_ptr<const void>(p, [n](const void* q) { ::munmap(const_cast<void*>(q), n); });
      m.data = static_cast<const uint8_t*>(p);
    }
    ::close(fd);
    it = mapped_.emplace(location, std::move(m)).first;
  }
  const Mapped& m = it->second;
  // Written so that no sum can wrap: a hostile offset or length near 2^64 is refused, not folded.
  if (offset > m.size || (length && *length > m.size - offset))
    throw Error(where + ": " + (length ? std::to_string(*length) + " bytes" : std::string("data")) + " at offset " +
                std::to_string(offset) + " run past the end of its " + std::to_string(m.size) + "-byte file");
  Bytes b;
  b.data = m.data ? m.data + offset : nullptr;
  b.size = length ? static_cast<size_t>(*length) : m.size - static_cast<size_t>(offset);
  b.room = m.size - static_cast<size_t>(offset);
  b.owner = m.owner;
  return b;
}

std::optional<DType> dtype_from_onnx(int elem_type) {
  switch (elem_type) {
    case TP::FLOAT: return DType::f32;
    case TP::INT64: return DType::i64;
    case TP::INT32: return DType::i32;
    case TP::INT8: return DType::i8;
    case TP::UINT8: return DType::u8;
    case TP::BOOL: return DType::boolean;
    case kOnnxUint4: return DType::u4;  // opset 21; Debian's libonnx predates the enum values
    case kOnnxInt4: return DType::i4;
    case kOnnxUint2: return DType::u2;  // opset 25
    case kOnnxInt2: return DType::i2;
    default: return std::nullopt;
  }
}

std::string onnx_dtype_name(int elem_type) {
  if (onnx::TensorProto_DataType_IsValid(elem_type))
    return onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(elem_type));
  return "type " + std::to_string(elem_type);
}

Tensor tensor_from_onnx(const TP& t, ExternalDataDir* external) {
  if (t.has_segment()) throw Error(tensor_label(t) + " is segmented, which lowbit does not support");
  // External data: the bytes raw_data would hold, in a file beside the model.
  std::optional<ExternalDataDir::Bytes> ext;
  if (t.data_location() == TP::EXTERNAL) {
    if (!external)
      throw Error(tensor_label(t) + " stores its data in an external file, and a model given as bytes has no folder "
                  "to read it from; load the model from its file");
    std::string location;
    uint64_t offset = 0;
    std::optional<uint64_t> length;
    for (const auto& kv : t.external_data()) {
      if (kv.key() == "location") {
        location = kv.value();
      } else if (kv.key() == "offset" || kv.key() == "length") {
        auto v = parse_u64(kv.value());
        if (!v) throw Error(tensor_label(t) + ": external data " + kv.key() + " '" + kv.value() + "' is not a number");
        (kv.key() == "offset" ? offset : length.emplace()) = *v;
      }  // "checksum" (SHA-1, optional) is not verified; other keys are ignored, as ONNX does
    }
    try {
      ext = external->read(location, offset, length);
    } catch (const Error& e) {
      throw Error(tensor_label(t) + ": " + e.what());
    }
  }

  const int dt = t.data_type();
  DType out;
  switch (dt) {
    case TP::FLOAT: case TP::DOUBLE: case TP::FLOAT16: case TP::BFLOAT16: out = DType::f32; break;
    default: {
      auto d = dtype_from_onnx(dt);
      if (!d) throw Error(tensor_label(t) + " has element type " + onnx_dtype_name(dt) + ", which lowbit does not support");
      out = *d;
    }
  }
  Shape shape;
  for (int64_t d : t.dims()) {
    if (d < 0) throw Error(tensor_label(t) + " has a negative dimension " + std::to_string(d));
    shape.push_back(d);
  }
  const bool has_raw = ext || t.has_raw_data();
  const std::string_view raw = ext ? std::string_view(reinterpret_cast<const char*>(ext->data), ext->size)
                                   : std::string_view(t.raw_data());
  // Stored exactly as lowbit holds it, aligned, and with a vector's over-read inside the mapping:
  // the constant is the mapping (a multi-GB model is not copied).
  if (const auto exact = dtype_from_onnx(dt); ext && exact && !is_subbyte(*exact)) {
    const int64_t n = checked_num_elements(shape);
    if (tensor_fits(out, n) && static_cast<uint64_t>(storage_bytes(out, n)) == raw.size() &&
        reinterpret_cast<uintptr_t>(raw.data()) % 64 == 0 && raw.size() + 64 <= ext->room)
      return Tensor::wrap(out, shape, raw.data(), ext->owner);
  }
  // Every count is checked against what the tensor declares before its memory is allocated: a
  // tiny model declaring a 100 GB initializer must be an error, not an out-of-memory kill.
  const int64_t n = checked_num_elements(shape);
  if (!tensor_fits(out, n))
    throw Error(tensor_label(t) + " declares shape " + shape_str(shape) + ", more than lowbit allows one tensor");
  auto check_count = [&](int64_t have, const char* field) {
    if (have != n)
      throw Error(tensor_label(t) + " (" + onnx_dtype_name(dt) + ", shape " + shape_str(shape) + ") has " +
                  std::to_string(have) + " values in " + field + ", expected " + std::to_string(n));
  };
  const char* const source = ext ? "external data" : "raw_data";
  auto check_bytes = [&](int64_t want) {
    if (static_cast<int64_t>(raw.size()) != want)
      throw Error(tensor_label(t) + " (" + onnx_dtype_name(dt) + ", shape " + shape_str(shape) + ") has " +
                  std::to_string(raw.size()) + " bytes of " + source + ", expected " + std::to_string(want));
  };
  if (is_subbyte(out)) {
    if (!has_raw)
      throw Error(tensor_label(t) + " (" + onnx_dtype_name(dt) + ") keeps its values in int32_data; lowbit reads " +
                  std::to_string(bit_width(out)) + "-bit tensors from raw_data only");
    check_bytes(storage_bytes(out, n));
  } else if (has_raw) {
    check_bytes(n * raw_elem_bytes(dt));
  } else {
    switch (dt) {
      case TP::FLOAT: check_count(t.float_data_size(), "float_data"); break;
      case TP::DOUBLE: check_count(t.double_data_size(), "double_data"); break;
      case TP::INT64: check_count(t.int64_data_size(), "int64_data"); break;
      default: check_count(t.int32_data_size(), "int32_data");
    }
  }
  Tensor r(out, shape);

  if (is_subbyte(out)) {
    // Packed two (4-bit) or four (2-bit) per byte, element 0 in the lowest bits: lowbit's own
    // i4 / u4 / i2 / u2 storage.
    const int64_t want = r.nbytes();
    if (want) std::memcpy(r.raw(), raw.data(), static_cast<size_t>(want));
    const int64_t used_bits = n * bit_width(out) % 8;  // the unused high bits of a partial tail byte
    if (used_bits) r.data<uint8_t>()[want - 1] &= static_cast<uint8_t>((1u << used_bits) - 1u);
    return r;
  }
  if (has_raw) {
    const int64_t want = n * raw_elem_bytes(dt);
    const char* p = raw.data();
    switch (dt) {
      case TP::DOUBLE:
        for (int64_t i = 0; i < n; ++i) {
          double v;
          std::memcpy(&v, p + 8 * i, 8);
          r.data<float>()[i] = static_cast<float>(v);
        }
        break;
      case TP::FLOAT16: case TP::BFLOAT16:
        for (int64_t i = 0; i < n; ++i) {
          uint16_t v;
          std::memcpy(&v, p + 2 * i, 2);
          r.data<float>()[i] = dt == TP::FLOAT16 ? half_to_float(v) : bfloat16_to_float(v);
        }
        break;
      default:  // the bytes are already lowbit's layout (little endian)
        if (want) std::memcpy(r.raw(), p, static_cast<size_t>(want));
    }
    return r;
  }

  // Typed fields (their counts checked above): each element type has its designated repeated field.
  switch (dt) {
    case TP::FLOAT:
      for (int64_t i = 0; i < n; ++i) r.data<float>()[i] = t.float_data(static_cast<int>(i));
      break;
    case TP::DOUBLE:
      for (int64_t i = 0; i < n; ++i) r.data<float>()[i] = static_cast<float>(t.double_data(static_cast<int>(i)));
      break;
    case TP::FLOAT16: case TP::BFLOAT16:
      for (int64_t i = 0; i < n; ++i) {
        auto v = static_cast<uint16_t>(t.int32_data(static_cast<int>(i)));
        r.data<float>()[i] = dt == TP::FLOAT16 ? half_to_float(v) : bfloat16_to_float(v);
      }
      break;
    case TP::INT64:
      for (int64_t i = 0; i < n; ++i) r.data<int64_t>()[i] = t.int64_data(static_cast<int>(i));
      break;
    case TP::INT32:
      for (int64_t i = 0; i < n; ++i) r.data<int32_t>()[i] = t.int32_data(static_cast<int>(i));
      break;
    case TP::INT8:
      for (int64_t i = 0; i < n; ++i) r.data<int8_t>()[i] = static_cast<int8_t>(t.int32_data(static_cast<int>(i)));
      break;
    case TP::UINT8: case TP::BOOL:
      for (int64_t i = 0; i < n; ++i) r.data<uint8_t>()[i] = static_cast<uint8_t>(t.int32_data(static_cast<int>(i)));
      break;
  }
  return r;
}

Tensor load_onnx_tensor_file(const std::string& path, std::string* name_out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("cannot open tensor file '" + path + "': " + std::strerror(errno));
  std::stringstream ss;
  ss << f.rdbuf();
  onnx::TensorProto t;
  if (!t.ParseFromString(ss.str()))
    throw Error("cannot parse tensor file '" + path + "': not a valid TensorProto");
  if (name_out) *name_out = t.name();
  try {
    return tensor_from_onnx(t);
  } catch (const Error& e) {
    throw Error("tensor file '" + path + "': " + e.what());
  }
}

}  // namespace lowbit
