"""Shared helpers for the PyTorch-oracle end-to-end tests (run with /usr/bin/python3)."""
import math

import numpy as np
import torch
import torchvision

MODELS = ("resnet18", "resnet50", "mobilenet_v2")
INPUT_SHAPE = (1, 3, 224, 224)


def build_torchvision(name):
    """torchvision's architecture, randomly initialised, in eval mode."""
    if name not in MODELS:
        raise SystemExit(f"unknown model {name!r} (known: {', '.join(MODELS)})")
    return getattr(torchvision.models, name)(weights=None).eval()


def randomise(model):
    """Weights like lowbit's zoo: conv N(0, 1/fan_in), BN with non-trivial statistics (so BN folding
    really changes the weights), linear N(0, 0.01). torchvision's own fan_out init with random BN
    statistics lets ResNet-50's activations grow into the hundreds."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.Conv2d):
                fan_in = m.weight[0].numel()
                m.weight.normal_(0.0, 1.0 / math.sqrt(fan_in))
                if m.bias is not None:
                    m.bias.normal_(0.0, 0.01)
            elif isinstance(m, torch.nn.BatchNorm2d):
                m.weight.uniform_(0.5, 1.5)
                m.bias.normal_(0.0, 0.1)
                m.running_mean.normal_(0.0, 0.1)
                m.running_var.uniform_(0.5, 1.5)
            elif isinstance(m, torch.nn.Linear):
                m.weight.normal_(0.0, 0.01)
                m.bias.normal_(0.0, 0.01)
    return model


def seeded_input(seed):
    return np.random.default_rng(seed).standard_normal(INPUT_SHAPE).astype("<f4")


def run_torch(model, x):
    with torch.no_grad():
        return model(torch.from_numpy(x)).numpy().astype("<f4")


def save_npy(path, a):
    np.save(path, np.ascontiguousarray(a, dtype="<f4"))


def rel_l2(ref, out):
    ref = ref.astype(np.float64)
    out = out.astype(np.float64)
    return float(np.linalg.norm(out - ref) / max(np.linalg.norm(ref), 1e-30))
