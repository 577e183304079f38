#pragma once
// ONNX TensorProto <-> lowbit Tensor. Kept apart from the importer so that tests and tools can
// read serialized .pb tensors without pulling in graph import.
#include <onnx/onnx_pb.h>

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

// Converts a TensorProto (raw_data or typed fields). DOUBLE, FLOAT16 and BFLOAT16 are narrowed /
// widened to f32; strings, other integer widths and external data throw lowbit::Error naming the
// tensor.
Tensor tensor_from_onnx(const onnx::TensorProto& t);

// Reads a file holding one serialized TensorProto (the ONNX test-data input_N.pb format).
// `name_out`, when given, receives the tensor's name.
Tensor load_onnx_tensor_file(const std::string& path, std::string* name_out = nullptr);

}  // namespace lowbit
