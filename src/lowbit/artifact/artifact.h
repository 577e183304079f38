#pragma once
// The .lbm model artifact: a compiled (optimised, possibly quantized) graph and its weights.
//
// Layout (little endian, checked on load):
//   [0, 64)  header: magic "LOWBITM\0", u32 version, u32 endianness tag 0x01020304,
//            u64 meta offset, u64 meta size, u64 data offset, u64 data size,
//            u64 FNV-1a-64 checksum, u64 reserved (0). The checksum covers every byte of the file
//            but its own 8 (version 1 files, still read, covered the bytes after the header only).
//   meta     JSON (at most 64 MiB): graph structure (values with dtype, shape, quantization,
//            constant location; nodes with attributes), plus free-form metadata (precision, ...)
//   data     starts at the next 64-byte boundary and ends the file: constant tensors, each 64-byte
//            aligned, exactly as the graph holds them
// A checksum only catches accidents; whatever passes it is still checked as hostile input: sizes
// with arithmetic that cannot wrap, constants inside the data section and matching their values,
// value ids in range, and then the graph goes through the same validation as an imported model.
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
