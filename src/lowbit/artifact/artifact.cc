#include "lowbit/artifact/artifact.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "lowbit/common/error.h"

namespace lowbit {
namespace {

using json = nlohmann::json;
constexpr char kMagic[8] = {'L', 'O', 'W', 'B', 'I', 'T', 'M', '\0'};
constexpr uint32_t kVersion = 1;
constexpr uint32_t kEndianTag = 0x01020304;
constexpr size_t kHeaderSize = 64;

struct Header {
  char magic[8];
  uint32_t version;
  uint32_t endian;
  uint64_t meta_offset, meta_size, data_offset, data_size, checksum, reserved;
};
static_assert(sizeof(Header) == kHeaderSize);

uint64_t fnv1a(const uint8_t* p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ULL;
  return h;
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

  Header h{};
  std::memcpy(h.magic, kMagic, 8);
  h.version = kVersion;
  h.endian = kEndianTag;
  h.meta_offset = kHeaderSize;
  h.meta_size = m.size();
  h.data_offset = align64(kHeaderSize + m.size());
  h.data_size = w.blob_.size();
  std::vector<uint8_t> body(h.data_offset + h.data_size - kHeaderSize, 0);
  std::memcpy(body.data(), m.data(), m.size());
  if (!w.blob_.empty()) std::memcpy(body.data() + (h.data_offset - kHeaderSize), w.blob_.data(), w.blob_.size());
  h.checksum = fnv1a(body.data(), body.size());

  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw Error("cannot write artifact '" + path + "'");
  f.write(reinterpret_cast<const char*>(&h), sizeof h);
  f.write(reinterpret_cast<const char*>(body.data()), static_cast<std::streamsize>(body.size()));
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
  if (h.version != kVersion)
    throw bad("format version " + std::to_string(h.version) + ", this lowbit reads version " +
              std::to_string(kVersion));
  if (h.meta_offset != kHeaderSize || h.meta_offset + h.meta_size > size || h.data_offset < h.meta_offset + h.meta_size ||
      h.data_offset + h.data_size != size)
    throw bad("truncated or corrupt: sections do not fit the file (" + std::to_string(size) + " bytes, expected " +
              std::to_string(h.data_offset + h.data_size) + ")");
  if (fnv1a(bytes + kHeaderSize, size - kHeaderSize) != h.checksum) throw bad("checksum mismatch: the file is corrupt");

  json meta;
  try {
    meta = json::parse(bytes + h.meta_offset, bytes + h.meta_offset + h.meta_size);
  } catch (const std::exception& e) {
    throw bad(std::string("metadata is not valid JSON: ") + e.what());
  }
  const uint8_t* data = bytes + h.data_offset;
  auto tensor = [&](const json& j) {
    auto dt = dtype_from_name(j.at("dtype").get<std::string>());
    if (!dt) throw bad("unknown dtype " + j.at("dtype").dump());
    Shape shape = j.at("shape").get<Shape>();
    uint64_t off = j.at("offset"), nb = j.at("nbytes");
    if (off + nb > h.data_size || static_cast<int64_t>(nb) != storage_bytes(*dt, num_elements(shape)))
      throw bad("tensor extends past the data section");
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
      ValueId id = g.add_value(jv.at("name"), *dt, jv.at("shape").get<Shape>(), true);
      if (jv.contains("quant")) {
        const json& q = jv["quant"];
        Tensor scale = tensor(q.at("scale"));
        QuantParams qp;
        qp.axis = q.at("axis").get<int>();
        qp.scale.assign(scale.data<float>(), scale.data<float>() + scale.numel());
        qp.zero_point.assign(q.at("channels").get<size_t>(), 0);
        if (q.contains("zero_point")) {
          Tensor zp = tensor(q["zero_point"]);
          if (static_cast<size_t>(zp.numel()) != qp.zero_point.size()) throw bad("zero point count mismatch");
          qp.zero_point.assign(zp.data<int32_t>(), zp.data<int32_t>() + zp.numel());
        }
        if (scale.dtype() != DType::f32 || qp.scale.size() != qp.zero_point.size())
          throw bad("quantization parameters of '" + g.value(id).name + "' are malformed");
        if (q.contains("code")) {
          auto code = q["code"].is_string() ? dtype_from_name(q["code"].get<std::string>()) : std::nullopt;
          if (!code) throw bad("unknown code dtype " + q["code"].dump() + " of '" + g.value(id).name + "'");
          qp.code = *code;
        }
        if (q.contains("narrow")) {
          if (!q["narrow"].is_boolean()) throw bad("'narrow' of '" + g.value(id).name + "' is not a boolean");
          qp.narrow = q["narrow"].get<bool>();
        }
        if (q.contains("block_size")) {
          if (!q["block_size"].is_number_integer() || q["block_size"].get<int64_t>() < 0)
            throw bad("'block_size' of '" + g.value(id).name + "' is not a non-negative integer");
          qp.block_size = q["block_size"].get<int64_t>();
        }
        g.value(id).quant = std::move(qp);
      }
      if (jv.contains("constant")) g.value(id).constant = tensor(jv["constant"]);
    }
    auto check_id = [&](ValueId v) {
      if (v != kNoValue && (v < 0 || static_cast<size_t>(v) >= g.values.size())) throw bad("value id out of range");
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
      std::vector<ValueId> in = jn.at("inputs").get<std::vector<ValueId>>(), out = jn.at("outputs").get<std::vector<ValueId>>();
      for (ValueId v : in) check_id(v);
      for (ValueId v : out) check_id(v);
      g.add_node(jn.at("op"), jn.at("name"), in, out, std::move(attrs));
    }
    for (ValueId v : jg.at("inputs").get<std::vector<ValueId>>()) g.inputs.push_back(check_id(v));
    for (ValueId v : jg.at("outputs").get<std::vector<ValueId>>()) g.outputs.push_back(check_id(v));
    a.metadata_json = meta.at("metadata").dump();
  } catch (const json::exception& e) {
    throw bad(std::string("metadata is malformed: ") + e.what());
  }
  return a;
}

}  // namespace lowbit
