#include "lowbit/quant/patches.h"

#include <algorithm>

#include "lowbit/common/error.h"

namespace lowbit {

PatchGeometry patch_geometry(const Graph& g, const Node& n) {
  PatchGeometry p;
  const Shape& xs = g.value(n.inputs[0]).shape;
  if (n.op == "Gemm") {
    if (xs.size() != 2) throw Error("node " + n.label() + ": a Gemm's patches need a 2-D input");
    p.C = xs[1];  // one position per row: the rows are the items
    return p;
  }
  const Shape& ws = g.value(n.inputs[1]).shape;
  const Shape& ys = g.value(n.outputs[0]).shape;
  if (xs.size() != 4 || ws.size() != 4 || ys.size() != 4)
    throw Error("node " + n.label() + ": patches are sampled from 2-D convs and Gemms");
  const Attributes& a = n.attrs;
  p.C = xs[1], p.H = xs[2], p.W = xs[3];
  p.groups = a.get_int("group", 1);
  p.KH = ws[2], p.KW = ws[3], p.OH = ys[2], p.OW = ys[3];
  const auto st = a.get_ints("strides", {1, 1}), di = a.get_ints("dilations", {1, 1});
  const auto pads = a.get_ints("pads", {0, 0, 0, 0});
  p.sh = st.at(0), p.sw = st.at(1), p.dh = di.at(0), p.dw = di.at(1);
  const std::string auto_pad = a.get_string("auto_pad", "NOTSET");
  auto begin_pad = [&](int64_t I, int64_t K, int64_t O, int64_t S, int64_t D, int64_t given) -> int64_t {
    if (auto_pad == "VALID") return 0;
    if (auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER") return given;
    const int64_t total = std::max<int64_t>(0, (O - 1) * S + (K - 1) * D + 1 - I);
    return auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
  };
  p.ph = begin_pad(p.H, p.KH, p.OH, p.sh, p.dh, pads.at(0));
  p.pw = begin_pad(p.W, p.KW, p.OW, p.sw, p.dw, pads.at(1));
  return p;
}

void extract_patch(const PatchGeometry& p, const float* x, int64_t pos, int64_t group, float* patch) {
  const int64_t per = p.OH * p.OW, Cg = p.C / p.groups;
  const int64_t n = pos / per, oh = pos % per / p.OW, ow = pos % p.OW;
  for (int64_t ci = 0; ci < Cg; ++ci) {
    const float* plane = x + ((n * p.C) + group * Cg + ci) * p.H * p.W;
    for (int64_t kh = 0; kh < p.KH; ++kh) {
      const int64_t ih = oh * p.sh - p.ph + kh * p.dh;
      for (int64_t kw = 0; kw < p.KW; ++kw) {
        const int64_t iw = ow * p.sw - p.pw + kw * p.dw;
        patch[(ci * p.KH + kh) * p.KW + kw] = ih >= 0 && ih < p.H && iw >= 0 && iw < p.W ? plane[ih * p.W + iw] : 0.0f;
      }
    }
  }
}

}  // namespace lowbit
