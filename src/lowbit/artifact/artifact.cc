#include "lowbit/artifact/artifact.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "lowbit/common/error.h"
#include "lowbit/ir/op_schema.h"

namespace lowbit {
namespace {

using json = nlohmann::json;
constexpr char kMagic[8] = {'L', 'O', 'W', 'B', 'I', 'T', 'M', '\0'};
// Version 2 extends the checksum over the header's own fields (version 1 summed the body only, so
// a flipped byte in the reserved field or a section size that still happened to fit went unseen);
// version 1 files still load.
constexpr uint32_t kVersion = 2;
constexpr uint32_t kOldestVersion = 1;
constexpr uint32_t kEndianTag = 0x01020304;
constexpr size_t kHeaderSize = 64;

struct Header {
  char magic[8];
  uint32_t version;
  uint32_t endian;
  uint64_t meta_offset, meta_size, data_offset, data_size, checksum, reserved;
};
static_assert(sizeof(Header) == kHeaderSize);

// FNV-1a-64: every single-byte change is detected (each step is a bijection of the state), which
// is what a corrupted download or a truncated copy needs; it is not a defence against a forger,
// which is why everything behind it is validated as if hostile anyway.
constexpr uint64_t kFnvBasis = 0xcbf29ce484222325ULL;
uint64_t fnv1a(const uint8_t* p, size_t n, uint64_t h = kFnvBasis) {
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ULL;
  return h;
}

// Version 2: the header without its checksum field, then the body.
constexpr size_t kChecksumAt = offsetof(Header, checksum);
uint64_t file_checksum(uint32_t version, const uint8_t* file, size_t size) {
  uint64_t h = kFnvBasis;
  if (version >= 2) {
    h = fnv1a(file, kChecksumAt, h);
    h = fnv1a(file + kChecksumAt + 8, kHeaderSize - kChecksumAt - 8, h);
  }
  return fnv1a(file + kHeaderSize, size - kHeaderSize, h);
}

// The metadata JSON is parsed into a DOM of 10-25x its size: 64 MiB of it is a graph of about a
// million values (ResNet-50's is 120 KB), and anything larger is refused before parsing.
constexpr uint64_t kMaxMetaBytes = uint64_t{64} << 20;
// lowbit writes at most 7 levels (graph, values, value, quant, scale, shape); nlohmann's parser
// keeps any depth on the heap, but dump() and the conversions recurse, and a few hundred kB of
// '[' would overflow the stack there.
constexpr int kMaxMetaDepth = 64;

// A JSON number as an exact non-negative integer (a double such as 1e300 converted to an integer
// type is undefined behaviour, not an error).
uint64_t json_u64(const json& j, const char* what) {
  if (!j.is_number_unsigned() && !(j.is_number_integer() && j.get<int64_t>() >= 0))
    throw json::type_error::create(302, std::string(what) + " must be a non-negative integer", &j);
  return j.get<uint64_t>();
}
std::vector<ValueId> json_ids(const json& j) {
  if (!j.is_array()) throw json::type_error::create(302, "value ids must be an array", &j);
  std::vector<ValueId> ids;
  for (const json& v : j) {
    if (!v.is_number_integer() || v.get<int64_t>() < kNoValue || v.get<int64_t>() > INT32_MAX)
      throw json::type_error::create(302, "a value id must be an integer", &v);
    ids.push_back(static_cast<ValueId>(v.get<int64_t>()));
  }
  return ids;
}
Shape json_shape(const json& j) {
  if (!j.is_array()) throw json::type_error::create(302, "a shape must be an array", &j);
  Shape s;
  for (const json& d : j) s.push_back(static_cast<int64_t>(json_u64(d, "a dim")));
  return s;
}

size_t align64(size_t x) { return (x + 63) / 64 * 64; }

class Writer {
 public:
  json tensor(const Tensor& t) {
    size_t off = align64(blob_.size());
    blob_.resize(off + static_cast<size_t>(t.nbytes()), 0);
    if (t.nbytes()) std::memcpy(blob_.data() + off, t.raw(), static_cast<size_t>(t.nbytes()));
    return {{"dtype", dtype_name(t.dtype())}, {"shape", t.shape()}, {"offset", off}, {"nbytes", t.nbytes()}};
  }
  json attr(const AttrValue& v) {
    return std::visit(
        [&](const auto& x) -> json {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, int64_t>) return {{"int", x}};
          else if constexpr (std::is_same_v<T, float>) return {{"float", x}};
          else if constexpr (std::is_same_v<T, std::string>) return {{"string", x}};
          else if constexpr (std::is_same_v<T, std::vector<int64_t>>) return {{"ints", x}};
          else if constexpr (std::is_same_v<T, std::vector<float>>) return {{"floats", x}};
          else if constexpr (std::is_same_v<T, std::vector<std::string>>) return {{"strings", x}};
          else return {{"tensor", tensor(x)}};
        },
        v);
  }
  // Per-channel scales and zero points go to the data section as binary: as JSON text they would
  // cost ~18 bytes a number (bigger than the int8 weights of a depthwise layer) and round-trip
  // floats through decimal. All-zero zero points (symmetric weights) are not stored at all.
  json quant(const QuantParams& q) {
    Tensor scale(DType::f32, {static_cast<int64_t>(q.scale.size())});
    std::memcpy(scale.raw(), q.scale.data(), q.scale.size() * sizeof(float));
    json j = {{"scale", tensor(scale)}, {"axis", q.axis}, {"channels", q.zero_point.size()}};
    bool symmetric = std::all_of(q.zero_point.begin(), q.zero_point.end(), [](int32_t z) { return z == 0; });
    if (!symmetric) {
      Tensor zp(DType::i32, {static_cast<int64_t>(q.zero_point.size())});
      std::memcpy(zp.raw(), q.zero_point.data(), q.zero_point.size() * sizeof(int32_t));
      j["zero_point"] = tensor(zp);
    }
    // The scheme's code type and narrow range, only where they differ from the storage's defaults
    // (int8 artifacts are unchanged).
    if (q.code) j["code"] = dtype_name(*q.code);
    if (q.narrow) j["narrow"] = true;
    if (q.block_size) j["block_size"] = q.block_size;
    return j;
  }
  std::vector<uint8_t> blob_;
};

}  // namespace

void save_artifact(const std::string& path, const Graph& g, const std::string& metadata_json) {
  Writer w;
  json values = json::array();
  for (const Value& v : g.values) {
    json jv = {{"name", v.name}, {"dtype", dtype_name(v.dtype)}, {"shape", v.shape}};
    if (v.quant) jv["quant"] = w.quant(*v.quant);
    if (v.constant) jv["constant"] = w.tensor(*v.constant);
    values.push_back(std::move(jv));
  }
  json nodes = json::array();
  for (const Node& n : g.nodes) {
    json attrs = json::object();
    for (const auto& [k, v] : n.attrs.all()) attrs[k] = w.attr(v);
    nodes.push_back({{"name", n.name}, {"op", n.op}, {"inputs", n.inputs}, {"outputs", n.outputs}, {"attrs", attrs}});
  }
  json meta = {{"graph", {{"name", g.name}, {"inputs", g.inputs}, {"outputs", g.outputs}, {"values", values},
                          {"nodes", nodes}}},
               {"metadata", json::parse(metadata_json)}};
  std::string m = meta.dump();
  if (m.size() > kMaxMetaBytes)
    throw Error("cannot write artifact '" + path + "': its graph description is " + std::to_string(m.size()) +
                " bytes, more than the " + std::to_string(kMaxMetaBytes >> 20) + " MiB an artifact may hold");

  Header h{};
  std::memcpy(h.magic, kMagic, 8);
  h.version = kVersion;
  h.endian = kEndianTag;
  h.meta_offset = kHeaderSize;
  h.meta_size = m.size();
  h.data_offset = align64(kHeaderSize + m.size());
  h.data_size = w.blob_.size();
  std::vector<uint8_t> file(h.data_offset + h.data_size, 0);
  std::memcpy(file.data() + kHeaderSize, m.data(), m.size());
  if (!w.blob_.empty()) std::memcpy(file.data() + h.data_offset, w.blob_.data(), w.blob_.size());
  std::memcpy(file.data(), &h, sizeof h);
  h.checksum = file_checksum(h.version, file.data(), file.size());
  std::memcpy(file.data(), &h, sizeof h);

  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw Error("cannot write artifact '" + path + "'");
  f.write(reinterpret_cast<const char*>(file.data()), static_cast<std::streamsize>(file.size()));
  if (!f) throw Error("failed writing artifact '" + path + "'");
}

bool is_artifact_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char m[8] = {};
  return f.read(m, 8) && std::memcmp(m, kMagic, 8) == 0;
}

Artifact load_artifact(const std::string& path) {
  auto bad = [&](const std::string& why) { return Error("artifact '" + path + "': " + why); };
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw bad(std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    throw bad("cannot stat");
  }
  size_t size = static_cast<size_t>(st.st_size);
  if (size < kHeaderSize) {
    ::close(fd);
    throw bad("truncated: " + std::to_string(size) + " bytes, smaller than the 64-byte header");
  }
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) throw bad("mmap failed");
  std::shared_ptr<const void> region(p, [size](const void* q) { ::munmap(const_cast<void*>(q), size); });
  const auto* bytes = static_cast<const uint8_t*>(p);
  Header h;
  std::memcpy(&h, bytes, sizeof h);
  if (std::memcmp(h.magic, kMagic, 8) != 0) throw bad("not a lowbit artifact (bad magic)");
  if (h.endian != kEndianTag) throw bad("written on a machine of the other endianness; not loadable here");
  if (h.version < kOldestVersion || h.version > kVersion)
    throw bad("format version " + std::to_string(h.version) + ", this lowbit reads versions " +
              std::to_string(kOldestVersion) + " to " + std::to_string(kVersion));
  // Every comparison below is written so that no sum can wrap: a hostile size near 2^64 must not
  // turn into a small one.
  const uint64_t fsize = size;
  if (h.meta_offset != kHeaderSize || h.meta_size > fsize - kHeaderSize)
    throw bad("truncated or corrupt: the metadata section (" + std::to_string(h.meta_size) + " bytes at " +
              std::to_string(h.meta_offset) + ") does not fit the file's " + std::to_string(size) + " bytes");
  if (h.meta_size > kMaxMetaBytes)
    throw bad("metadata section of " + std::to_string(h.meta_size) + " bytes, more than the " +
              std::to_string(kMaxMetaBytes >> 20) + " MiB lowbit reads");
  const uint64_t data_at = align64(kHeaderSize + h.meta_size);  // cannot wrap: meta_size <= 64 MiB
  if (h.data_offset != data_at || h.data_offset > fsize || h.data_size != fsize - h.data_offset)
    throw bad("truncated or corrupt: the data section (" + std::to_string(h.data_size) + " bytes at " +
              std::to_string(h.data_offset) + ") does not end the file's " + std::to_string(size) + " bytes");
  if (h.version >= 2 && h.reserved != 0) throw bad("corrupt: the header's reserved field is not zero");
  if (file_checksum(h.version, bytes, size) != h.checksum) throw bad("checksum mismatch: the file is corrupt");

  json meta;
  try {
    const json::parser_callback_t depth_limit = [](int depth, json::parse_event_t, json&) {
      if (depth > kMaxMetaDepth) throw Error("nested deeper than " + std::to_string(kMaxMetaDepth) + " levels");
      return true;
    };
    meta = json::parse(bytes + h.meta_offset, bytes + h.meta_offset + h.meta_size, depth_limit);
  } catch (const std::exception& e) {
    throw bad(std::string("metadata is not valid JSON: ") + e.what());
  }
  const uint8_t* data = bytes + h.data_offset;
  auto tensor = [&](const json& j) {
    auto dt = dtype_from_name(j.at("dtype").get<std::string>());
    if (!dt) throw bad("unknown dtype " + j.at("dtype").dump());
    Shape shape = json_shape(j.at("shape"));
    if (std::string why = tensor_size_problem(*dt, shape); !why.empty()) throw bad("a constant's " + why);
    const uint64_t off = json_u64(j.at("offset"), "offset"), nb = json_u64(j.at("nbytes"), "nbytes");
    // Constants are written 64-byte aligned: kernels load them as floats and vectors in place.
    if (off % 64 != 0 || off > h.data_size || nb > h.data_size - off ||
        nb != static_cast<uint64_t>(storage_bytes(*dt, num_elements(shape))))
      throw bad("a constant of " + shape_str(shape) + " " + dtype_name(*dt) + " (" + std::to_string(nb) + " bytes at " +
                std::to_string(off) + ") is misplaced in the " + std::to_string(h.data_size) + "-byte data section");
    return Tensor::wrap(*dt, shape, data + off, region);
  };
  Artifact a;
  try {
    const json& jg = meta.at("graph");
    Graph& g = a.graph;
    g.name = jg.at("name");
    for (const json& jv : jg.at("values")) {
      auto dt = dtype_from_name(jv.at("dtype").get<std::string>());
      if (!dt) throw bad("unknown dtype " + jv.at("dtype").dump());
      const Shape shape = json_shape(jv.at("shape"));
      ValueId id = g.add_value(jv.at("name"), *dt, shape, true);
      const std::string& name = g.value(id).name;
      if (std::string why = tensor_size_problem(*dt, shape); !why.empty()) throw bad("value '" + name + "': " + why);
      if (jv.contains("quant")) {
        const json& q = jv["quant"];
        Tensor scale = tensor(q.at("scale"));
        QuantParams qp;
        qp.axis = q.at("axis").get<int>();
        const size_t channels = json_u64(q.at("channels"), "channels");
        if (scale.dtype() != DType::f32 || static_cast<size_t>(scale.numel()) != channels)
          throw bad("quantization parameters of '" + name + "' are malformed: " + std::to_string(scale.numel()) + " " +
                    dtype_name(scale.dtype()) + " scales for " + std::to_string(channels) + " channels");
        qp.scale.assign(scale.data<float>(), scale.data<float>() + scale.numel());
        qp.zero_point.assign(channels, 0);
        if (q.contains("zero_point")) {
          Tensor zp = tensor(q["zero_point"]);
          if (zp.dtype() != DType::i32 || static_cast<size_t>(zp.numel()) != channels)
            throw bad("quantization parameters of '" + name + "' are malformed: zero points do not match the scales");
          qp.zero_point.assign(zp.data<int32_t>(), zp.data<int32_t>() + zp.numel());
        }
        if (q.contains("code")) {
          auto code = q["code"].is_string() ? dtype_from_name(q["code"].get<std::string>()) : std::nullopt;
          if (!code) throw bad("unknown code dtype " + q["code"].dump() + " of '" + name + "'");
          qp.code = *code;
        }
        if (q.contains("narrow")) {
          if (!q["narrow"].is_boolean()) throw bad("'narrow' of '" + name + "' is not a boolean");
          qp.narrow = q["narrow"].get<bool>();
        }
        if (q.contains("block_size")) {
          if (!q["block_size"].is_number_integer() || q["block_size"].get<int64_t>() < 0)
            throw bad("'block_size' of '" + name + "' is not a non-negative integer");
          qp.block_size = q["block_size"].get<int64_t>();
        }
        g.value(id).quant = std::move(qp);
      }
      if (jv.contains("constant")) {
        Tensor t = tensor(jv["constant"]);
        // Validation reads the value's dtype and shape, kernels the constant's bytes: they must agree.
        if (t.dtype() != *dt || t.shape() != shape)
          throw bad("value '" + name + "' is " + shape_str(shape) + " " + dtype_name(*dt) + " but its constant is " +
                    shape_str(t.shape()) + " " + dtype_name(t.dtype()));
        g.value(id).constant = std::move(t);
      }
    }
    // A node's optional input or output may be absent (kNoValue); a graph input or output may not.
    auto check_id = [&](ValueId v, bool optional = true) {
      if ((v != kNoValue || !optional) && (v < 0 || static_cast<size_t>(v) >= g.values.size()))
        throw bad("value id " + std::to_string(v) + " out of range");
      return v;
    };
    for (const json& jn : jg.at("nodes")) {
      Attributes attrs;
      for (auto& [k, v] : jn.at("attrs").items()) {
        if (v.contains("int")) attrs.set(k, v["int"].get<int64_t>());
        else if (v.contains("float")) attrs.set(k, v["float"].get<float>());
        else if (v.contains("string")) attrs.set(k, v["string"].get<std::string>());
        else if (v.contains("ints")) attrs.set(k, v["ints"].get<std::vector<int64_t>>());
        else if (v.contains("floats")) attrs.set(k, v["floats"].get<std::vector<float>>());
        else if (v.contains("strings")) attrs.set(k, v["strings"].get<std::vector<std::string>>());
        else if (v.contains("tensor")) attrs.set(k, tensor(v["tensor"]));
        else throw bad("attribute '" + k + "' has an unknown kind");
      }
      std::vector<ValueId> in = json_ids(jn.at("inputs")), out = json_ids(jn.at("outputs"));
      for (ValueId v : in) check_id(v);
      for (ValueId v : out) check_id(v);
      g.add_node(jn.at("op"), jn.at("name"), in, out, std::move(attrs));
    }
    for (ValueId v : json_ids(jg.at("inputs"))) g.inputs.push_back(check_id(v, false));
    for (ValueId v : json_ids(jg.at("outputs"))) g.outputs.push_back(check_id(v, false));
    a.metadata_json = meta.at("metadata").dump();
  } catch (const json::exception& e) {
    throw bad(std::string("metadata is malformed: ") + e.what());
  }
  return a;
}

}  // namespace lowbit
