#include "lowbit/operators/winograd_plan.h"

namespace lowbit::winograd {

namespace {
constexpr int64_t kMinTiles = 32;    // fewer tiles: U (16/9 of the weights) is reused too little
constexpr int64_t kMinChannels = 8;  // fewer input channels: the transforms outweigh the GEMMs
}  // namespace

std::string applies(const Conv2dParams& p) {
  if (p.KH != 3 || p.KW != 3) return "kernel " + std::to_string(p.KH) + "x" + std::to_string(p.KW) + ", needs 3x3";
  if (p.SH != 1 || p.SW != 1) return "stride " + std::to_string(p.SH) + "x" + std::to_string(p.SW) + ", needs 1";
  if (p.DH != 1 || p.DW != 1) return "dilation " + std::to_string(p.DH) + "x" + std::to_string(p.DW) + ", needs 1";
  if (p.group != 1) return "group " + std::to_string(p.group) + ", needs 1";
  const int64_t tiles = ((p.OH + 1) / 2) * ((p.OW + 1) / 2);
  if (tiles < kMinTiles)
    return std::to_string(tiles) + " output tiles of 2x2, needs " + std::to_string(kMinTiles) +
           " to reuse the 16/9 larger transformed weights";
  if (p.C < kMinChannels) return std::to_string(p.C) + " input channels, needs " + std::to_string(kMinChannels);
  return "";
}

Plan::Plan(const Conv2dParams& p, int64_t nr, int64_t nr_tail, int64_t mr) {
  TH = (p.OH + 1) / 2;
  TW = (p.OW + 1) / 2;
  T = TH * TW;
  // Rows and columns [-pad, 2 * tiles + 2 - pad) of the input: every patch, zero (zp) around.
  PH = 2 * TH + 2;
  PW = 2 * TW + 2;
  M = p.M;
  mpanels = (p.M + mr - 1) / mr;
  for (int64_t t0 = 0; t0 < T; t0 += nr) {
    Panel pan;
    pan.t0 = t0;
    pan.nvalid = std::min(nr, T - t0);
    pan.width = pan.nvalid <= nr_tail ? nr_tail : nr;
    pan.base = tpad;
    tpad += pan.width;
    pan.seg_begin = static_cast<int32_t>(segs.size());
    for (int64_t t = t0; t < t0 + pan.nvalid;) {
      const int64_t ty = t / TW, tx = t % TW, n = std::min(TW - tx, t0 + pan.nvalid - t);
      segs.push_back({static_cast<int32_t>(2 * ty), static_cast<int32_t>(2 * tx), static_cast<int32_t>(t - t0),
                      static_cast<int32_t>(n)});
      t += n;
    }
    pan.seg_end = static_cast<int32_t>(segs.size());
    panels.push_back(pan);
  }
}

int64_t Plan::panel_of(int64_t m) const {
  int64_t mp = m * mpanels / M;
  while (panel_m0(mp + 1) <= m) ++mp;
  while (panel_m0(mp) > m) --mp;
  return mp;
}

}  // namespace lowbit::winograd
