"""paddleocr_rec.py KEYS TEXTS OUTDIR: decodes the recogniser's outputs OUTDIR/{fp32,int8,nearest,gptq}_I.npy
(CTC: best class per step, repeats merged, blanks dropped; class c > 0 is KEYS line c - 1, the last a
space, as PaddleOCR's use_space_char), prints what each model read, and checks test_paddleocr_rec.sh's
claims."""
import sys

import numpy as np


def decode(y, keys):
    out, prev = [], -1
    for c in y.reshape(-1, y.shape[-1]).argmax(-1):
        if c != prev and c != 0:
            out.append(keys[c - 1])
        prev = c
    return "".join(out)


def cosine(a, b):
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def main():
    keys_path, texts_path, outdir = sys.argv[1:4]
    keys = [line.rstrip("\n") for line in open(keys_path, encoding="utf-8")] + [" "]
    texts = [line.rstrip("\n") for line in open(texts_path, encoding="utf-8")]
    models = ["fp32", "int8", "nearest", "gptq"]
    y = {m: [np.load(f"{outdir}/{m}_{i}.npy") for i in range(len(texts))] for m in models}
    read = {m: [decode(t, keys) for t in y[m]] for m in models}
    same = {m: sum(a == b for a, b in zip(read[m], read["fp32"])) for m in models}
    cos = {m: float(np.mean([cosine(a, b) for a, b in zip(y[m], y["fp32"])])) for m in models}
    right = sum(a == b for a, b in zip(read["fp32"], texts))
    print(f"{'rendered':28s} | " + " | ".join(f"{m:28s}" for m in models))
    for i, t in enumerate(texts):
        print(f"{t:28s} | " + " | ".join(f"{read[m][i]:28s}" for m in models))
    for m in models[1:]:
        print(f"{m:8s} cosine vs fp32 {cos[m]:.4f}, reads {same[m]}/{len(texts)} lines as fp32 does")
    print(f"fp32 reads {right}/{len(texts)} lines as rendered")
    n = len(texts)
    ok = True

    def check(cond, what):
        nonlocal ok
        print(("ok    " if cond else "FAIL  ") + what)
        ok &= cond

    check(right >= n - 1, "fp32 reads all lines but at most one as rendered")
    check(same["int8"] >= n - 1, "int8 reads all lines but at most one as fp32 does")
    check(same["gptq"] >= n - 2, "w4a8 gptq reads all lines but at most two as fp32 does")
    check(same["gptq"] > same["nearest"], "w4a8 gptq reads more lines as fp32 does than w4a8 nearest")
    half = (cos["nearest"] + cos["int8"]) / 2
    check(cos["gptq"] >= half, f"w4a8 gptq cosine {cos['gptq']:.4f} at least halfway from nearest's to int8's ({half:.4f})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
