"""export_torchvision.py MODEL OUTDIR: a seeded, randomly initialised torchvision MODEL exported to
OUTDIR/model.onnx (opset 13, input "input", BatchNormalization kept unfused), a seeded input
OUTDIR/in.npy and PyTorch's output OUTDIR/ref.npy."""
import argparse
import collections
import os
import warnings

import onnx
import torch

import oracle_common as oc


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model", choices=oc.MODELS)
    ap.add_argument("outdir")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    os.makedirs(a.outdir, exist_ok=True)

    torch.manual_seed(a.seed)
    model = oc.randomise(oc.build_torchvision(a.model))
    x = oc.seeded_input(1000 + a.seed)
    path = os.path.join(a.outdir, "model.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # PRESERVE (the model is in eval mode) keeps BatchNormalization nodes; the default EVAL mode
        # would fold them into the convolutions here and leave lowbit's folding untested.
        torch.onnx.export(model, torch.from_numpy(x), path, opset_version=13, input_names=["input"],
                          output_names=["logits"], training=torch.onnx.TrainingMode.PRESERVE,
                          do_constant_folding=True)
    proto = onnx.load(path)
    onnx.checker.check_model(proto)
    ops = collections.Counter(n.op_type for n in proto.graph.node)
    if ops["BatchNormalization"] == 0:
        raise SystemExit("export folded BatchNormalization; the test would not exercise lowbit's BN folding")
    oc.save_npy(os.path.join(a.outdir, "in.npy"), x)
    ref = oc.run_torch(model, x)
    oc.save_npy(os.path.join(a.outdir, "ref.npy"), ref)
    print(f"{a.model}: exported {path} ({sum(ops.values())} nodes: {dict(sorted(ops.items()))}); "
          f"torch logits rms={float((ref.astype('f8') ** 2).mean() ** 0.5):.3g}")


if __name__ == "__main__":
    main()
