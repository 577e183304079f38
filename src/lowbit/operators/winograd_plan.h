#pragma once
// What the fp32 and the exact int8 Winograd F(2x2, 3x3) drivers share: when the algorithm applies,
// the output tiles and their panels (the GEMM micro-kernels' B panels, each with its segments:
// runs of tiles in one tile row, the transforms' unit), channel panels of balanced height, and the
// task grid with its walk order. The drivers keep what differs: the data types, the layouts of U
// and V, the transforms.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "lowbit/ir/op_params.h"
#include "lowbit/kernels/f32-winograd/f32_winograd.h"
#include "lowbit/runtime/thread_pool.h"
#include "lowbit/target/target.h"

namespace lowbit::winograd {

constexpr int64_t kXi = 16;                 // 4 x 4 transformed elements per tile
constexpr int64_t kGroup = 4;               // channel panels whose U stays in L2 across tile panels

// Whether transformed weights U of `u_bytes` stay in L2 across a task's tile panels: up to half of
// it (256 KB on Zen 3's 512 KB, where this was a constant; ResNet's 3x3 convs have U of 147 KB to
// 9.4 MB in fp32, so a 1-2 MB L2 moves the 64-128 channel stages to the tile-major walk).
inline bool u_fits_l2(int64_t u_bytes, const CacheSizes& c) { return u_bytes <= c.l2 / 2; }

// "" if F(2x2, 3x3) applies to the conv (3x3, stride 1, dilation 1, ungrouped) and repays its
// 16/9 larger transformed weights (>= 32 output tiles, >= 8 input channels); else why not.
std::string applies(const Conv2dParams& p);

struct Panel {
  int64_t t0, nvalid, width, base;  // first tile, tiles, lanes (nr or nr_tail), column in V
  int32_t seg_begin, seg_end;       // its segments in Plan::segs
};

class Plan {
 public:
  // Tile panels nr wide (the last nr_tail wide when it fits), channel panels of at most mr rows.
  Plan(const Conv2dParams& p, int64_t nr, int64_t nr_tail, int64_t mr);

  int64_t TH = 0, TW = 0, T = 0;  // tile rows, tiles per row, tiles
  int64_t PH = 0, PW = 0;         // the padded plane covering every tile's 4x4 patch
  int64_t tpad = 0;               // tile columns of all panels together
  int64_t M = 0, mpanels = 0;
  std::vector<Panel> panels;
  std::vector<F32WinogradSegment> segs;

  // First output channel of channel panel mp (balanced: 64 = 6 x 10-11, as the implicit GEMM).
  int64_t panel_m0(int64_t mp) const { return M * mp / mpanels; }
  int64_t panel_of(int64_t m) const;

  // The GEMM phase: tasks of channel-panel ranges x tile-panel ranges, tile panels major (a
  // thread's share of the tasks is a region of the image), a few per thread. Each task calls
  // tile(mpa, mpb, pi, first_pass) for channel-panel groups [mpa, mpb) of at most kGroup panels:
  // with a small U tile panels are the outer loop (each panel's V stays in L2 across the channel
  // panels), else channel-panel groups (each group's U stays in L2 across the tile panels;
  // first_pass marks a group's first tile panel, where its U comes from memory).
  template <class Tile>
  void run_gemm_tasks(ThreadPool& pool, bool u_small, Tile&& tile) const {
    const int threads = pool.size();
    const int64_t np = static_cast<int64_t>(panels.size());
    const int64_t want = threads == 1 ? 1 : 4 * static_cast<int64_t>(threads);
    // psplit a multiple of the threads where the panels allow: thread i's share is then the i-th
    // band of tile panels, the band the fp32 driver's input transform gave it.
    const int64_t msplit = std::min(mpanels, want);
    int64_t psplit = std::min(np, (want + msplit - 1) / msplit);
    if (threads > 1 && np >= threads) psplit = std::min(np / threads * threads, (psplit + threads - 1) / threads * threads);
    pool.parallel_for(msplit * psplit, [&](int64_t t, int thread) {
      const int64_t ps = t / msplit, ms = t % msplit;
      const int64_t mp0 = mpanels * ms / msplit, mp1 = mpanels * (ms + 1) / msplit;
      const int64_t pi0 = np * ps / psplit, pi1 = np * (ps + 1) / psplit;
      if (u_small) {
        for (int64_t pi = pi0; pi < pi1; ++pi)
          for (int64_t mp = mp0; mp < mp1; mp += kGroup) tile(mp, std::min(mp1, mp + kGroup), pi, false, thread);
      } else {
        for (int64_t mp = mp0; mp < mp1; mp += kGroup)
          for (int64_t pi = pi0; pi < pi1; ++pi) tile(mp, std::min(mp1, mp + kGroup), pi, pi == pi0, thread);
      }
    });
  }
};

// Pulls slice `step` of `steps` of [base, base + bytes) into L2 (the next channel panel's U while
// the current one computes).
inline void prefetch_slice(const char* base, int64_t bytes, int64_t step, int64_t steps) {
  for (int64_t o = bytes * step / steps / 64 * 64, e = bytes * (step + 1) / steps; o < e; o += 64)
    __builtin_prefetch(base + o, 0, 2);
}

}  // namespace lowbit::winograd
