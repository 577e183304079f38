// The .lbm reader against damaged and hostile files (artifact/artifact.h). Small quantized models
// (int8 and w4a8, plain and with prepacked weights) are saved, then:
//  - every single byte of the file is changed: each variant must be refused (100% detection: the
//    checksum covers every byte but its own, and a change there is a mismatch too);
//  - the file is cut at every length: each is refused;
//  - the metadata and data are changed and the checksum recomputed, as a forger (or a fuzzer) would:
//    each variant must be refused with lowbit::Error, or load, compile and run; never a crash, an
//    escaped std:: exception or (under the sanitizer build) a bad read.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "lowbit/artifact/artifact.h"
#include "lowbit/common/error.h"
#include "lowbit/io/synthetic.h"
#include "lowbit/quant/guard.h"
#include "lowbit/quant/precision.h"
#include "lowbit/runtime/compiled_model.h"
#include "fuzz/fuzz_targets.h"

namespace lowbit {
namespace {

using ::testing::HasSubstr;
using Bytes = std::string;

Tensor random_f32(Shape s, uint32_t seed, float scale = 0.5f) {
  Tensor t(DType::f32, std::move(s));
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.f, scale);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = n(rng);
  return t;
}

ValueId conv(Graph& g, const std::string& name, ValueId x, int64_t cin, int64_t cout, int64_t k, int64_t stride,
             uint32_t seed) {
  const ValueId w = g.add_constant(name + ".w", random_f32({cout, cin, k, k}, seed, 1.f / std::sqrt(float(cin * k * k))));
  const ValueId b = g.add_constant(name + ".b", random_f32({cout}, seed + 1, 0.1f));
  const ValueId y = g.add_value(name + ".y");
  Attributes a;
  a.set("pads", std::vector<int64_t>(4, k / 2));
  a.set("strides", std::vector<int64_t>{stride, stride});
  g.add_node("Conv", name, {x, w, b}, {y}, a);
  return y;
}

ValueId op(Graph& g, const std::string& type, const std::string& name, std::vector<ValueId> xs, Attributes a = {}) {
  const ValueId y = g.add_value(name + ".y");
  g.add_node(type, name, std::move(xs), {y}, std::move(a));
  return y;
}

// A residual CNN in miniature: conv, relu, conv + skip, relu, max pool, 1x1 conv, global average
// pool, flatten, Gemm; 32 channels so that the SIMD int8 and sub-byte rows take the convs.
Graph tiny_cnn() {
  Graph g;
  const ValueId x = g.add_value("x", DType::f32, {1, 3, 12, 12}, true);
  g.inputs = {x};
  ValueId h = op(g, "Relu", "stem.relu", {conv(g, "stem", x, 3, 32, 3, 1, 1)});
  ValueId r = conv(g, "block.conv", h, 32, 32, 3, 1, 3);
  h = op(g, "Relu", "block.relu", {op(g, "Add", "block.add", {r, h})});
  Attributes mp;
  mp.set("kernel_shape", std::vector<int64_t>{2, 2});
  mp.set("strides", std::vector<int64_t>{2, 2});
  h = op(g, "MaxPool", "pool", {h}, mp);
  h = op(g, "GlobalAveragePool", "gap", {conv(g, "head.conv", h, 32, 32, 1, 1, 5)});
  Attributes fl;
  fl.set("axis", int64_t{1});
  h = op(g, "Flatten", "flatten", {h}, fl);
  const ValueId w = g.add_constant("fc.w", random_f32({10, 32}, 7, 0.2f));
  const ValueId b = g.add_constant("fc.b", random_f32({10}, 8, 0.1f));
  Attributes gm;
  gm.set("transB", int64_t{1});
  g.outputs = {op(g, "Gemm", "fc", {h, w, b}, gm)};
  return g;
}

std::string tmp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("lowbit_artifact_test_" + std::to_string(::getpid()) + name))
      .string();
}

Bytes read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return Bytes((std::istreambuf_iterator<char>(f)), {});
}

void write_file(const std::string& path, const Bytes& b) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(b.data(), std::streamsize(b.size()));
}

// One byte of the file, changed where it lies (the sweeps below change thousands, one at a time).
void put_byte(const std::string& path, size_t at, char c) {
  std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
  f.seekp(std::streamoff(at));
  f.put(c);
}

uint64_t header_u64(const Bytes& b, size_t at) {
  uint64_t v;
  std::memcpy(&v, b.data() + at, 8);
  return v;
}

// The artifact `b` with its metadata JSON replaced by `meta` (any length): the data section moves
// to the next 64-byte boundary as the writer places it, and the checksum is recomputed.
Bytes with_meta(const Bytes& b, const std::string& meta) {
  const uint64_t data_at = header_u64(b, 32);
  Bytes out = b.substr(0, 64) + meta;
  out.resize((out.size() + 63) / 64 * 64, '\0');
  const uint64_t meta_size = meta.size(), new_data_at = out.size();
  out += b.substr(data_at);
  std::memcpy(out.data() + 24, &meta_size, 8);
  std::memcpy(out.data() + 32, &new_data_at, 8);
  fuzz::reseal_artifact(out);
  return out;
}
Bytes meta_of(const Bytes& b) { return b.substr(64, header_u64(b, 24)); }

struct Saved {
  std::string what;
  Bytes bytes;
  std::vector<Tensor> inputs;
  Tensor output;  // what the saved model computes on `inputs`
};

// int8 and w4a8, each as the graph and with its prepacked weights (quantize --prepack).
const std::vector<Saved>& saved_models() {
  static const std::vector<Saved> saved = [] {
    std::vector<Saved> out;
    CompileOptions o;
    o.threads = 1;
    auto fp32 = CompiledModel::compile(tiny_cnn(), o);
    for (const char* prec : {"int8", "w4a8"}) {
      QuantizeOptions q;
      q.synthetic_samples = 2;
      q.precision = parse_precision(prec);
      QuantizedBuild b = build_quantized(*fp32, o, q, SlowPolicy::allow);
      const std::vector<Tensor> in = synthetic_inputs(b.model->graph(), 5);
      const Tensor y = b.model->run(in)[0].clone();
      for (bool prepacked : {false, true}) {
        const std::string path = tmp_path("save.lbm");
        save_artifact(path, prepacked ? b.model->graph_with_prepacked_weights() : b.model->graph(),
                      "{\"precision\":\"" + std::string(prec) + "\"}");
        out.push_back({std::string(prec) + (prepacked ? " prepacked" : ""), read_file(path), in, y});
        std::filesystem::remove(path);
      }
    }
    return out;
  }();
  return saved;
}

// Loads, compiles and runs `b`. Returns "" when it ran, else lowbit's message; anything else
// (another exception type) fails the test.
std::string try_artifact(const std::string& path, const Bytes& b, const std::vector<Tensor>& in, Tensor* out = nullptr) {
  write_file(path, b);
  try {
    Artifact a = load_artifact(path);
    CompileOptions o;
    o.threads = 1;
    auto m = CompiledModel::compile(std::move(a.graph), o);
    std::vector<Tensor> y = m->run(in);
    if (out) *out = y.at(0).clone();
    return "";
  } catch (const Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "escaped as " << typeid(e).name() << ": " << e.what();
    return "escaped";
  }
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw(), b.raw(), size_t(a.nbytes())) == 0;
}

TEST(Artifact, SavedModelsRoundTripBitExactly) {
  const std::string path = tmp_path("ok.lbm");
  for (const Saved& s : saved_models()) {
    SCOPED_TRACE(s.what);
    Tensor y;
    ASSERT_EQ(try_artifact(path, s.bytes, s.inputs, &y), "");
    EXPECT_TRUE(same_bytes(y, s.output));
    EXPECT_LT(s.bytes.size(), 64u << 10) << "the sweep below is sized for a small artifact";
  }
  std::filesystem::remove(path);
}

// Corruption sweep: every byte, header, metadata, padding and weights, changed one at a time.
TEST(Artifact, EverySingleByteChangeIsDetected) {
  const std::string path = tmp_path("flip.lbm");
  for (const Saved& s : {saved_models().front(), saved_models().back()}) {  // int8, w4a8 prepacked
    SCOPED_TRACE(s.what);
    size_t refused = 0;
    write_file(path, s.bytes);
    for (size_t i = 0; i < s.bytes.size(); ++i) {
      put_byte(path, i, char(uint8_t(s.bytes[i]) ^ (i % 2 ? 0x01 : 0xA5)));  // the lowest bit, several at once
      try {
        load_artifact(path);
        ADD_FAILURE() << "byte " << i << " changed and the artifact loaded";
      } catch (const Error& e) {
        ++refused;
        if (i == s.bytes.size() / 2) {
          EXPECT_THAT(e.what(), HasSubstr(path));
        }
      }
      put_byte(path, i, s.bytes[i]);
    }
    EXPECT_EQ(refused, s.bytes.size());
  }
  std::filesystem::remove(path);
}

TEST(Artifact, EveryTruncationIsRefused) {
  const std::string path = tmp_path("cut.lbm");
  const Saved& s = saved_models().front();
  write_file(path, s.bytes);
  for (size_t len = s.bytes.size(); len-- > 0;) {
    std::filesystem::resize_file(path, len);
    try {
      load_artifact(path);
      ADD_FAILURE() << "cut at " << len << " bytes and loaded";
    } catch (const Error& e) {
      if (len == 10 || len == s.bytes.size() - 1) {
        EXPECT_THAT(e.what(), HasSubstr("truncated")) << len;
      }
    }
  }
  std::filesystem::remove(path);
}

// Header fields that a forger sets with the checksum recomputed: sizes near 2^64 (a sum that wraps
// would pass a naive check), a data section that starts early or late, a huge metadata size.
TEST(Artifact, ForgedHeaderSizesAreRefusedWithoutWrapping) {
  const std::string path = tmp_path("hdr.lbm");
  const Saved& s = saved_models().front();
  // Header: magic 0, version 8, endianness 12, then u64 meta offset 16, meta size 24, data offset
  // 32, data size 40, checksum 48, reserved 56.
  const uint64_t meta_size = header_u64(s.bytes, 24), data_off = header_u64(s.bytes, 32);
  const uint64_t big = ~uint64_t{0};
  const std::vector<std::pair<size_t, uint64_t>> forged = {
      {16, 0},          {16, 128},         {24, big - 63},           {24, big},  {24, meta_size + 64},
      {24, 0},          {24, uint64_t{1} << 40}, {32, data_off - 64}, {32, data_off + 64}, {32, big - 63},
      {40, big - data_off + 1}, {40, big}, {40, 0},                   {56, 1}};
  for (auto [at, v] : forged) {
    Bytes b = s.bytes;
    std::memcpy(b.data() + at, &v, 8);
    fuzz::reseal_artifact(b);
    const std::string why = try_artifact(path, b, s.inputs);
    EXPECT_NE(why, "") << "field at " << at << " = " << v << " was accepted";
  }
  std::filesystem::remove(path);
}

// The metadata and the data, changed with the checksum recomputed: shapes, offsets, value ids,
// attribute values, op and dtype names, scales and zero points all take values the writer never
// wrote. Each variant is refused with lowbit::Error or runs.
TEST(Artifact, ForgedContentIsRefusedOrRunsNeverCrashes) {
  const std::string path = tmp_path("forge.lbm");
  size_t variants = 0, ran = 0;
#if defined(NDEBUG) && !defined(__SANITIZE_ADDRESS__)
  const size_t positions = 600;
#else
  const size_t positions = 200;
#endif
  for (const Saved& s : saved_models()) {
    SCOPED_TRACE(s.what);
    const size_t meta_end = 64 + header_u64(s.bytes, 24), data_at = header_u64(s.bytes, 32);
    // Metadata: a digit (shapes, ids, offsets, attribute values) takes 0, 9 and a neighbour, any
    // other character becomes '-', '9' or '"'; at about 600 positions spread over the whole text
    // (every position: 30000 variants and 22 s over the four models, for no kind of change this
    // misses), 200 in the sanitizer build.
    const size_t step = std::max<size_t>(1, (meta_end - 64) / positions) | 1;  // odd: lands on every residue
    for (size_t i = 64; i < meta_end; i += step) {
      const char c = s.bytes[i];
      std::vector<char> subs;
      if (c >= '0' && c <= '9') subs = {'0', '9', char('0' + (c - '0' + 1) % 10)};
      else subs = {i % 3 == 0 ? '-' : i % 3 == 1 ? '9' : '"'};
      for (char sub : subs) {
        if (sub == c) continue;
        Bytes b = s.bytes;
        b[i] = sub;
        fuzz::reseal_artifact(b);
        ran += try_artifact(path, b, s.inputs).empty();
        ++variants;
      }
    }
    // Data: scales, zero points, biases and weights, one byte at a time in odd steps that land on
    // every byte position of a float over the sweep.
    const size_t data_step = std::max<size_t>(1, (s.bytes.size() - data_at) / (positions / 2)) | 1;
    for (size_t i = data_at; i < s.bytes.size(); i += data_step) {
      Bytes b = s.bytes;
      b[i] = char(uint8_t(b[i]) ^ 0xFF);
      fuzz::reseal_artifact(b);
      ran += try_artifact(path, b, s.inputs).empty();
      ++variants;
    }
  }
  std::printf("%zu forged variants: %zu loaded and ran, the rest refused with a reason\n", variants, ran);
  EXPECT_GT(variants, 4 * positions);
  EXPECT_GT(ran, 0u);  // changed weights and biases are still a model
  std::filesystem::remove(path);
}

// A few forgeries with a known reason, so that the messages stay useful.
TEST(Artifact, ForgedGraphsNameWhatIsWrong) {
  const std::string path = tmp_path("named.lbm");
  const Saved& s = saved_models().front();
  auto forge = [&](const std::string& from, const std::string& to) {
    Bytes b = s.bytes;
    const size_t meta_end = 64 + header_u64(b, 24);
    const size_t at = b.find(from, 64);
    EXPECT_TRUE(at != Bytes::npos && at + from.size() <= meta_end) << from;
    if (at == Bytes::npos) return std::string();
    // Same length keeps every offset valid; pad with spaces that JSON ignores.
    Bytes rep = to;
    EXPECT_LE(rep.size(), from.size());
    rep.resize(from.size(), ' ');
    b.replace(at, from.size(), rep);
    fuzz::reseal_artifact(b);
    return try_artifact(path, b, s.inputs);
  };
  EXPECT_THAT(forge("\"op\":\"QConv\"", "\"op\":\"QConX\""), HasSubstr("unsupported op 'QConX'"));
  EXPECT_THAT(forge("\"dtype\":\"f32\"", "\"dtype\":\"f31\""), HasSubstr("unknown dtype"));
  // The first node (keys are written sorted: "nodes" precedes the graph's "outputs") writing over
  // value 0, which is the graph input, a constant or another node's output.
  {
    const size_t at = s.bytes.find("\"outputs\":[", 64) + 11;
    const size_t end = s.bytes.find(']', at);
    EXPECT_THAT(forge(s.bytes.substr(at - 11, end - at + 11), "\"outputs\":[0"), HasSubstr("already defined"));
  }
  auto edited = [&](const std::string& from, const std::string& to) {
    std::string meta = meta_of(s.bytes);
    const size_t at = meta.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at == std::string::npos) return std::string();
    meta.replace(at, from.size(), to);
    return try_artifact(path, with_meta(s.bytes, meta), s.inputs);
  };
  // The helper itself: an unchanged graph in a moved data section still runs.
  EXPECT_EQ(edited("\"metadata\":{", "\"metadata\":{\"note\":\"moved\","), "");
  // A graph input or output that is "no value" (a node's optional slot may be; a graph's may not).
  // The graph's keys come first and sorted: its "inputs" is the first in the text.
  {
    const std::string meta = meta_of(s.bytes);
    const size_t at = meta.find("\"inputs\":[");
    const std::string first = meta.substr(at, meta.find(']', at) + 1 - at);
    EXPECT_THAT(edited(first, "\"inputs\":[-1]"), HasSubstr("value id -1 out of range"));
  }
  // Nesting deep enough to overflow a recursive walk of the JSON (the parser keeps it on the heap,
  // dump() does not): refused while parsing.
  EXPECT_THAT(edited("\"metadata\":{", "\"metadata\":{\"deep\":" + std::string(200000, '[') +
                                             std::string(200000, ']') + ","),
              HasSubstr("nested deeper than 64 levels"));
  // A number that is not an exact non-negative integer where one must be.
  EXPECT_THAT(edited("\"offset\":0", "\"offset\":1e300"), HasSubstr("offset must be a non-negative integer"));
  // A value whose declared shape is not its constant's (keys sorted: the value's own "shape"
  // follows its "name"): validation would read one, kernels the other.
  {
    const size_t c = s.bytes.find("\"constant\":{", 64);
    const size_t next_value = s.bytes.find("\"name\":", s.bytes.find("\"name\":", c) + 1);
    const size_t at = s.bytes.rfind("\"shape\":[", next_value) + 9;  // the last key of the value
    const std::string dims = s.bytes.substr(at, s.bytes.find(']', at) - at);
    Bytes b = s.bytes;
    b[at] = b[at] == '9' ? '1' : char(b[at] + 1);  // its first dim
    fuzz::reseal_artifact(b);
    EXPECT_THAT(try_artifact(path, b, s.inputs), HasSubstr("but its constant is")) << dims;
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace lowbit
