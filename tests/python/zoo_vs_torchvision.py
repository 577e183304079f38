"""zoo_vs_torchvision.py MODEL ZOO_ONNX OUTDIR: proves lowbit's built-in MODEL is torchvision's
architecture. The initializers of ZOO_ONNX (from `lowbit export-onnx MODEL`) must match torchvision's
state_dict 1:1 by key and shape; they are loaded into torchvision, which is run on a seeded input:
OUTDIR/in.npy, OUTDIR/ref.npy (then compared against `lowbit run MODEL` by the caller)."""
import argparse
import os

import onnx
import torch
from onnx import numpy_helper

import oracle_common as oc

# Constants of the zoo graphs that are no torch parameters: the Clip bounds of ReLU6.
EXTRA_CONSTANTS = {"relu6.min", "relu6.max"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model", choices=oc.MODELS)
    ap.add_argument("zoo_onnx")
    ap.add_argument("outdir")
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    os.makedirs(a.outdir, exist_ok=True)

    proto = onnx.load(a.zoo_onnx)
    onnx.checker.check_model(proto, full_check=True)  # full_check also runs ONNX shape inference
    assert proto.ir_version == 7, proto.ir_version
    assert [(o.domain, o.version) for o in proto.opset_import] == [("", 13)], proto.opset_import
    assert [i.name for i in proto.graph.input] == ["input"], [i.name for i in proto.graph.input]
    assert [o.name for o in proto.graph.output] == ["logits"], [o.name for o in proto.graph.output]
    dims = [d.dim_value for d in proto.graph.output[0].type.tensor_type.shape.dim]
    assert dims == [1, 1000], dims
    inits = {t.name: numpy_helper.to_array(t) for t in proto.graph.initializer}

    model = oc.build_torchvision(a.model)
    sd = {k: v for k, v in model.state_dict().items() if not k.endswith("num_batches_tracked")}
    zoo_keys = set(inits) - EXTRA_CONSTANTS
    missing = sorted(set(sd) - zoo_keys)
    unexpected = sorted(zoo_keys - set(sd))
    bad_shape = sorted(k for k in set(sd) & zoo_keys if tuple(sd[k].shape) != inits[k].shape)
    if missing or unexpected or bad_shape:
        for what, keys in (("missing from zoo", missing), ("not in torchvision", unexpected),
                           ("shape mismatch", bad_shape)):
            if keys:
                print(f"{what} ({len(keys)}): {keys[:10]}")
        raise SystemExit(f"FAIL {a.model}: zoo constants do not match torchvision's state_dict")
    model.load_state_dict({k: torch.from_numpy(inits[k].copy()) for k in sd}, strict=False)
    print(f"{a.model}: {len(sd)} state_dict tensors match the zoo's constants 1:1 "
          f"({sum(v.size for k, v in inits.items() if k in sd)} values), {len(proto.graph.node)} ONNX nodes")

    x = oc.seeded_input(a.seed)
    ref = oc.run_torch(model, x)
    oc.save_npy(os.path.join(a.outdir, "in.npy"), x)
    oc.save_npy(os.path.join(a.outdir, "ref.npy"), ref)
    rms = float((ref.astype("f8") ** 2).mean() ** 0.5)
    print(f"{a.model}: torchvision logits rms={rms:.3g} max|.|={float(abs(ref).max()):.3g}")
    if not (0.01 < rms < 100):
        raise SystemExit(f"FAIL {a.model}: logits rms {rms} out of range: zoo weights blow up or vanish")


if __name__ == "__main__":
    main()
