#!/usr/bin/env python3
"""Records the training steps of a PyTorch model with torch.profiler, for `syncsim profile import`.

Writes OUT.json, the Chrome trace (prof.export_chrome_trace), and OUT.params.json, the companion
file with each module's own parameters, the batch and the model's name; then

    syncsim profile import OUT.json --params OUT.params.json --out OUT.profile
    syncsim replay --profile OUT.profile --workers 16 ...

replays the model with its measured per-layer times.

The model is any torch.nn.Module:
  --model mlp | cnn | resnet:20 ...  syncsim's own models (any of its --model forms that
                                bench/syncsim_torch.py builds; Fashion-MNIST's shape by default)
  --model resnet18              a torchvision model name (torchvision.models.NAME(num_classes=C))
  --model pkg.mod:factory       a callable returning the module (imported from PYTHONPATH)
with --input CxHxW (default 1x28x28 for syncsim's models, 3x224x224 for the others) and --classes C.

What the trace holds, which the importer reads (traces/FORMAT.md "Imported profiles"):
- a "ProfilerStep#N" range per recorded step (torch.profiler's schedule: --warmup steps run and
  are profiled but dropped, then --steps steps are kept);
- a "syncsim.layer:NAME" range (record_function) around every module's forward, NAME its path in
  the model ("layer1.0.conv1"; the whole model is "model"), and one "syncsim.layer:loss" around
  the loss; autograd's backward functions carry the sequence numbers of the forward operators,
  which map them to their layer;
- the operators' input shapes (record_shapes) and FLOPs (with_flops).
A step is: zero_grad, forward, cross-entropy loss, backward, SGD with momentum 0.9, on one fixed
random batch; on CUDA the step ends with torch.cuda.synchronize(), so that its range covers the
GPU's work. Activities: CPU, and CUDA when a GPU is used (--device cuda, the default where one is
available).

It installs nothing: PyTorch in a virtual environment outside the repository, e.g.
    python3 -m venv /tmp/torch-venv && /tmp/torch-venv/bin/pip install torch torchvision
    /tmp/torch-venv/bin/python bench/record_profile.py --model mlp --batch 64 --out /tmp/mlp

Usage: record_profile.py --model M --out PREFIX [--batch B] [--steps S] [--warmup W]
                         [--input CxHxW] [--classes C] [--threads T] [--device cpu|cuda]
"""
import argparse
import importlib
import json
import os
import sys

try:
    import torch
    import torch.nn as nn
    import syncsim_torch
    from torch.profiler import ProfilerActivity, profile, record_function, schedule
except ImportError:
    sys.stderr.write("record_profile.py: PyTorch is not installed (see the header of this file)\n")
    sys.exit(2)


SYNCSIM_ARCHS = ("logreg", "mlp", "cnn", "resnet", "vgg")


def is_syncsim(spec):
    return spec.partition(":")[0] in SYNCSIM_ARCHS


def make_model(spec, classes, in_c, in_hw):
    if is_syncsim(spec):
        return syncsim_torch.build(spec, in_c, in_hw, classes)
    if ":" in spec:
        mod, _, attr = spec.partition(":")
        try:
            fn = getattr(importlib.import_module(mod), attr)
        except (ImportError, AttributeError) as e:
            raise SystemExit(f"record_profile.py: --model {spec}: {e}")
        m = fn()
        if not isinstance(m, nn.Module):
            raise SystemExit(f"record_profile.py: --model {spec} returned a "
                             f"{type(m).__name__}, not a torch.nn.Module")
        return m
    try:
        import torchvision.models as tvm
    except ImportError:
        raise SystemExit(f"record_profile.py: --model {spec}: torchvision is not installed "
                         "(valid: a syncsim model, a torchvision model name, or module:callable)")
    if not hasattr(tvm, spec):
        raise SystemExit(f"record_profile.py: --model {spec}: not a torchvision model "
                         "(valid: a syncsim model, a torchvision model name, or module:callable)")
    return getattr(tvm, spec)(num_classes=classes)


def gemm_shape(m):
    """The matrix product's N and K of a dense or convolution layer (0, 0 for another)."""
    if isinstance(m, nn.Linear):
        return m.out_features, m.in_features
    if isinstance(m, nn.modules.conv._ConvNd):
        k = 1
        for d in m.kernel_size:
            k *= d
        return m.out_channels, m.in_channels // m.groups * k
    return 0, 0


def params_file(model, name, batch, input_shape):
    layers = []
    for path, m in model.named_modules():
        own = sum(p.numel() for p in m.parameters(recurse=False) if p.requires_grad)
        n, k = gemm_shape(m)
        layers.append({"name": path or "model", "type": type(m).__name__, "params": own,
                       "gemm_n": n, "gemm_k": k})
    sample = 4
    for d in input_shape:
        sample *= d
    return {"format": "syncsim-params", "version": 1, "model": name, "batch": batch,
            "input": "x".join(str(d) for d in input_shape), "sample_bytes": sample + 8,
            "torch": torch.__version__, "layers": layers}


def mark_layers(model):
    """A record_function range around every module's forward, named by its path."""
    open_ranges = {}

    def pre(m, args):
        r = record_function("syncsim.layer:" + m._syncsim_name)
        r.__enter__()
        open_ranges.setdefault(id(m), []).append(r)

    def post(m, args, out):
        open_ranges[id(m)].pop().__exit__(None, None, None)

    for path, m in model.named_modules():
        m._syncsim_name = path or "model"
        m.register_forward_pre_hook(pre)
        m.register_forward_hook(post)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--out", required=True, help="prefix: writes PREFIX.json, PREFIX.params.json")
    ap.add_argument("--name", help="the profile's name (default: the model's)")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=5, help="steps kept (default 5)")
    ap.add_argument("--warmup", type=int, default=3, help="steps run and dropped (default 3)")
    ap.add_argument("--input", help="CxHxW of one sample")
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: default)")
    ap.add_argument("--device", choices=["cpu", "cuda"],
                    default="cuda" if torch.cuda.is_available() else "cpu")
    a = ap.parse_args()
    if a.batch < 1 or a.steps < 1 or a.warmup < 0:
        ap.error("--batch and --steps must be >= 1, --warmup >= 0")
    if a.device == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda: no CUDA device is available")
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    spec = a.input or ("1x28x28" if is_syncsim(a.model) or ":" in a.model else "3x224x224")
    try:
        shape = [int(d) for d in spec.split("x")]
        assert shape and all(d > 0 for d in shape)
    except (ValueError, AssertionError):
        ap.error(f"--input: CxHxW with positive integers, not '{spec}'")
    name = a.name or (a.model.replace(":", "-").replace(",", "-") if is_syncsim(a.model) else
                      a.model.split(":")[-1] if ":" in a.model else a.model)

    torch.manual_seed(1)
    dev = torch.device(a.device)
    if is_syncsim(a.model) and (len(shape) != 3 or shape[1] != shape[2]):
        ap.error(f"--input: syncsim's models take square CxHxW inputs, not '{spec}'")
    model = make_model(a.model, a.classes, shape[0], shape[-1]).to(dev)
    model.train()
    x = torch.rand([a.batch] + shape, device=dev)
    y = torch.randint(0, a.classes, (a.batch,), device=dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
    loss_fn = nn.CrossEntropyLoss()
    mark_layers(model)

    def step():
        opt.zero_grad(set_to_none=False)
        out = model(x)
        with record_function("syncsim.layer:loss"):
            loss = loss_fn(out, y)
        loss.backward()
        opt.step()
        if a.device == "cuda":
            torch.cuda.synchronize()

    step()  # the first step allocates; then the profiler's warm-up steps
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if a.device == "cuda" else [])
    with profile(activities=acts, schedule=schedule(wait=0, warmup=a.warmup, active=a.steps,
                                                    repeat=1),
                 record_shapes=True, with_flops=True) as prof:
        for _ in range(a.warmup + a.steps):
            step()
            prof.step()
    trace_path = a.out + ".json"
    params_path = a.out + ".params.json"
    tmp = trace_path + ".tmp"
    prof.export_chrome_trace(tmp)
    os.replace(tmp, trace_path)
    with open(params_path + ".tmp", "w") as f:
        json.dump(params_file(model, name, a.batch, shape), f, indent=1)
        f.write("\n")
    os.replace(params_path + ".tmp", params_path)
    threads = torch.get_num_threads()
    print(f"{trace_path}, {params_path}: {name}, batch {a.batch}, {a.steps} steps after "
          f"{a.warmup} warm-up, {a.device}, {threads} threads, torch {torch.__version__}")


if __name__ == "__main__":
    main()
