#include "lowbit/frontend/onnx/onnx_tensor.h"

#include <cstring>
#include <fstream>
#include <sstream>

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

}  // namespace

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

Tensor tensor_from_onnx(const TP& t) {
  if (t.data_location() == TP::EXTERNAL)
    throw Error(tensor_label(t) + " stores its data in an external file, which lowbit does not read; "
                "re-save the model with all tensors inline (onnx.save(model, path, save_as_external_data=False))");
  if (t.has_segment()) throw Error(tensor_label(t) + " is segmented, which lowbit does not support");

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
  Tensor r(out, shape);
  const int64_t n = r.numel();

  if (is_subbyte(out)) {
    // Packed two (4-bit) or four (2-bit) per byte, element 0 in the lowest bits: lowbit's own
    // i4 / u4 / i2 / u2 storage.
    if (!t.has_raw_data())
      throw Error(tensor_label(t) + " (" + onnx_dtype_name(dt) + ") keeps its values in int32_data; lowbit reads " +
                  std::to_string(bit_width(out)) + "-bit tensors from raw_data only");
    const int64_t want = r.nbytes();
    if (static_cast<int64_t>(t.raw_data().size()) != want)
      throw Error(tensor_label(t) + " (" + onnx_dtype_name(dt) + ", shape " + shape_str(shape) + ") has " +
                  std::to_string(t.raw_data().size()) + " bytes of raw_data, expected " + std::to_string(want));
    if (want) std::memcpy(r.raw(), t.raw_data().data(), static_cast<size_t>(want));
    const int64_t used_bits = n * bit_width(out) % 8;  // the unused high bits of a partial tail byte
    if (used_bits) r.data<uint8_t>()[want - 1] &= static_cast<uint8_t>((1u << used_bits) - 1u);
    return r;
  }
  if (t.has_raw_data()) {
    const std::string& raw = t.raw_data();
    const int64_t want = n * raw_elem_bytes(dt);
    if (static_cast<int64_t>(raw.size()) != want)
      throw Error(tensor_label(t) + " (" + onnx_dtype_name(dt) + ", shape " + shape_str(shape) + ") has " +
                  std::to_string(raw.size()) + " bytes of raw_data, expected " + std::to_string(want));
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

  // Typed fields: each element type has its designated repeated field.
  auto check_count = [&](int64_t have, const char* field) {
    if (have != n)
      throw Error(tensor_label(t) + " (" + onnx_dtype_name(dt) + ", shape " + shape_str(shape) + ") has " +
                  std::to_string(have) + " values in " + field + ", expected " + std::to_string(n));
  };
  switch (dt) {
    case TP::FLOAT:
      check_count(t.float_data_size(), "float_data");
      for (int64_t i = 0; i < n; ++i) r.data<float>()[i] = t.float_data(static_cast<int>(i));
      break;
    case TP::DOUBLE:
      check_count(t.double_data_size(), "double_data");
      for (int64_t i = 0; i < n; ++i) r.data<float>()[i] = static_cast<float>(t.double_data(static_cast<int>(i)));
      break;
    case TP::FLOAT16: case TP::BFLOAT16:
      check_count(t.int32_data_size(), "int32_data");
      for (int64_t i = 0; i < n; ++i) {
        auto v = static_cast<uint16_t>(t.int32_data(static_cast<int>(i)));
        r.data<float>()[i] = dt == TP::FLOAT16 ? half_to_float(v) : bfloat16_to_float(v);
      }
      break;
    case TP::INT64:
      check_count(t.int64_data_size(), "int64_data");
      for (int64_t i = 0; i < n; ++i) r.data<int64_t>()[i] = t.int64_data(static_cast<int>(i));
      break;
    case TP::INT32:
      check_count(t.int32_data_size(), "int32_data");
      for (int64_t i = 0; i < n; ++i) r.data<int32_t>()[i] = t.int32_data(static_cast<int>(i));
      break;
    case TP::INT8:
      check_count(t.int32_data_size(), "int32_data");
      for (int64_t i = 0; i < n; ++i) r.data<int8_t>()[i] = static_cast<int8_t>(t.int32_data(static_cast<int>(i)));
      break;
    case TP::UINT8: case TP::BOOL:
      check_count(t.int32_data_size(), "int32_data");
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
