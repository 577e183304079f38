#pragma once
// ONNX TensorProto <-> lowbit Tensor. Kept apart from the importer so that tests and tools can
// read serialized .pb tensors without pulling in graph import.
#include <onnx/onnx_pb.h>

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "lowbit/ir/tensor.h"

namespace lowbit {

// TensorProto.DataType values newer than Debian's libonnx (onnx.proto: UINT4 = 21, INT4 = 22 from
// opset 21 / IR 10, UINT2 = 25, INT2 = 26 from opset 25 / IR 13; data_type is a plain int32 field,
// so they parse as integers). All pack their elements low bits first: lowbit's u4 / i4 / u2 / i2.
constexpr int kOnnxUint4 = 21;
constexpr int kOnnxInt4 = 22;
constexpr int kOnnxUint2 = 25;
constexpr int kOnnxInt2 = 26;

// The lowbit dtype an ONNX element type maps to exactly (FLOAT, INT64, INT32, INT8, UINT8, BOOL),
// or nullopt for the rest.
std::optional<DType> dtype_from_onnx(int elem_type);
// "FLOAT", "DOUBLE", ... (or "type <n>" for values this ONNX version does not name).
std::string onnx_dtype_name(int elem_type);

// External tensor data (onnx.save(..., save_as_external_data=True), needed above protobuf's 2 GB
// and written by ONNX Runtime's tools): the files a model's tensors point into, read from the
// model's own folder only. A location that is absolute, climbs out with "..", or resolves outside
// the folder through a symlink is refused; so is a range past the end of its file. Each file is
// mapped once; tensors whose stored type is lowbit's own and whose bytes are 64-byte aligned in the
// mapping wrap it (no copy), the rest are converted or copied out of it.
class ExternalDataDir {
 public:
  explicit ExternalDataDir(const std::string& model_path);
  struct Bytes {
    const uint8_t* data = nullptr;
    size_t size = 0;
    size_t room = 0;                    // mapped bytes from `data` to the end of the file
    std::shared_ptr<const void> owner;  // keeps the mapping alive
  };
  // [offset, offset + length) of `location`; no length: to the end of the file.
  Bytes read(const std::string& location, uint64_t offset, std::optional<uint64_t> length);

 private:
  struct Mapped {
    std::shared_ptr<const void> owner;
    const uint8_t* data = nullptr;
    size_t size = 0;
  };
  std::string model_path_;
  std::string base_;  // the model's folder, canonical
  std::map<std::string, Mapped> mapped_;
};

// Converts a TensorProto (raw_data, typed fields, or external data read through `external`).
// DOUBLE, FLOAT16 and BFLOAT16 are narrowed / widened to f32; strings, other integer widths, and
// external data without `external` (a model given as bytes has no folder) throw lowbit::Error
// naming the tensor.
Tensor tensor_from_onnx(const onnx::TensorProto& t, ExternalDataDir* external = nullptr);

// Reads a file holding one serialized TensorProto (the ONNX test-data input_N.pb format).
// `name_out`, when given, receives the tensor's name.
Tensor load_onnx_tensor_file(const std::string& path, std::string* name_out = nullptr);

}  // namespace lowbit
