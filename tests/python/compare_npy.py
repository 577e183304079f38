"""compare_npy.py REF OUT [--tol T] [--label L]: relative L2 error of OUT against REF; exit 1 above T."""
import argparse
import sys

import numpy as np

from oracle_common import rel_l2


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ref")
    ap.add_argument("out")
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--label", default="")
    a = ap.parse_args()
    ref, out = np.load(a.ref), np.load(a.out)
    label = a.label or a.out
    if out.dtype != np.float32:
        print(f"FAIL {label}: output dtype {out.dtype}, expected float32")
        return 1
    if ref.shape != out.shape:
        print(f"FAIL {label}: shape {out.shape} != reference {ref.shape}")
        return 1
    if not np.all(np.isfinite(out)):
        print(f"FAIL {label}: output has NaN/Inf")
        return 1
    err = rel_l2(ref, out)
    max_abs = float(np.max(np.abs(out.astype(np.float64) - ref)))
    same_top1 = int(np.argmax(out)) == int(np.argmax(ref))
    ok = err <= a.tol
    print(f"{'PASS' if ok else 'FAIL'} {label}: rel_l2={err:.3e} (tol {a.tol:.0e}) max_abs_diff={max_abs:.3e} "
          f"ref_rms={float(np.sqrt(np.mean(ref.astype(np.float64) ** 2))):.3g} top1_match={same_top1}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
