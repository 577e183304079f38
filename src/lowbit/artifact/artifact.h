#pragma once
// The .lbm model artifact: a compiled (optimised, possibly quantized) graph and its weights.
//
// Layout (little endian, checked on load):
//   [0, 64)  header: magic "LOWBITM\0", u32 version, u32 endianness tag 0x01020304,
//            u64 meta offset, u64 meta size, u64 data offset, u64 data size,
//            u64 FNV-1a-64 checksum of every byte after the header, u64 reserved
//   meta     JSON: graph structure (values with dtype, shape, quantization, constant location;
//            nodes with attributes), plus free-form metadata (precision, calibration, ...)
//   data     constant tensors, each 64-byte aligned, exactly as the graph holds them
// Loading maps the file (mmap) and wraps the constants in place: nothing is copied.
// The same graph and metadata always produce the same bytes.
#include <string>

#include "lowbit/ir/graph.h"

namespace lowbit {

struct Artifact {
  Graph graph;
  std::string metadata_json;  // "{}" when none
};

void save_artifact(const std::string& path, const Graph& g, const std::string& metadata_json = "{}");
// Throws lowbit::Error naming the file and what is wrong (truncated, corrupt, wrong version...).
Artifact load_artifact(const std::string& path);
// True if the file starts with the artifact magic.
bool is_artifact_file(const std::string& path);

}  // namespace lowbit
