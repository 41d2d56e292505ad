#!/usr/bin/env python3
"""One training step of a syncsim model repeated in PyTorch from the same weights and batch: the
loss, every parameter's gradient and the running statistics after the step must agree.

    build/bench/step_dump --model resnet:20 --batch 8 --out /tmp/step     # syncsim's step
    python3 bench/torch_check.py /tmp/step                                 # PyTorch's

step_dump writes the initial parameters, the batch (NHWC), the loss, the gradients and the
buffers; this script builds the same model with bench/syncsim_torch.py, copies the parameters in
(syncsim's views and PyTorch's parameters are in the same order; a convolution's weight goes
from syncsim's (OC, KH, KW, C) to PyTorch's (OC, C, KH, KW), and the first dense layer after a
flatten of C > 1 channels from (H, W, C) to (C, H, W) features), runs forward, cross-entropy and
backward in fp32 on the CPU, and prints per tensor the relative error ||torch - syncsim|| /
||syncsim||. Exit 0 when the loss and every tensor are within --tol (default 1e-4), 1 otherwise.
It also prints the smallest |input| of any ReLU relative to its tensor's RMS: a batch where one
lies within fp32's rounding of zero (below about 1e-5) may take the other branch there on one
side, and the gradients of every layer before it then differ by 1e-3 to 1e-2 (seen on ResNet-20
at batch 8, seed 1: 2.5e-6); another seed or batch checks the same code.

With --double PyTorch runs in float64: the reference is then the exact step, and only syncsim's
rounding (and a ReLU it switches) remains.

Usage: torch_check.py DIR [--tol X] [--threads T] [--double]
"""
import argparse
import os
import sys

try:
    import numpy as np
    import torch
    import torch.nn as nn
    import syncsim_torch
except ImportError:
    sys.stderr.write("torch_check.py: PyTorch (and numpy) are not installed\n")
    sys.exit(2)


def read_views(path):
    views = []
    with open(path) as f:
        for line in f:
            name, off, cnt = line.split()
            views.append((name, int(off), int(cnt)))
    return views


def to_torch_layout(arr, p, prev_is_flatten_of):
    """syncsim's flat view as PyTorch's tensor shape."""
    if p.dim() == 4:  # conv weight (OC, KH, KW, C) -> (OC, C, KH, KW)
        oc, c, kh, kw = p.shape
        return arr.reshape(oc, kh, kw, c).transpose(0, 3, 1, 2)
    if p.dim() == 2 and prev_is_flatten_of:  # dense after flatten: (H, W, C) -> (C, H, W)
        c, h, w = prev_is_flatten_of
        out = p.shape[0]
        return arr.reshape(out, h, w, c).transpose(0, 3, 1, 2).reshape(out, c * h * w)
    return arr.reshape(p.shape)


def flatten_shapes(model, x):
    """For each Linear that follows a flatten of a (C, H, W) activation with C > 1: that shape."""
    shapes, last = {}, [None]

    def hook_flat(mod, inp, out):
        last[0] = tuple(inp[0].shape[1:]) if inp[0].dim() == 4 else None

    def hook_lin(mod, inp, out):
        if last[0] is not None and last[0][0] > 1:
            shapes[id(mod)] = last[0]
        last[0] = None
    hs = []
    for m in model.modules():
        if isinstance(m, nn.Flatten):
            hs.append(m.register_forward_hook(hook_flat))
        elif isinstance(m, nn.Linear):
            hs.append(m.register_forward_hook(hook_lin))
    with torch.no_grad():
        model.eval()
        model(x)
        model.train()
    for h in hs:
        h.remove()
    return shapes


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--double", action="store_true",
                    help="PyTorch in float64: syncsim's fp32 against the exact step")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    meta = dict(line.split(None, 1) for line in open(os.path.join(a.dir, "step.txt")))
    name, batch = meta["model"].strip(), int(meta["batch"])
    loss_s = float(meta["loss"])
    raw = lambda f, t: np.fromfile(os.path.join(a.dir, f), dtype=t)
    params, grads, bufs = raw("params.f32", np.float32), raw("grads.f32", np.float32), \
        raw("buffers.f32", np.float32)
    x = raw("x.f32", np.float32).reshape(batch, 28, 28, 1).transpose(0, 3, 1, 2)
    y = raw("y.u8", np.uint8).astype(np.int64)
    views = read_views(os.path.join(a.dir, "views.txt"))
    bviews = read_views(os.path.join(a.dir, "buffer_views.txt"))

    torch.manual_seed(0)
    model = syncsim_torch.build(name)
    xt = torch.from_numpy(np.ascontiguousarray(x))
    if a.double:
        model, xt = model.double(), xt.double()
    flat = flatten_shapes(model, xt)
    mods = {id(p): m for m in model.modules() for p in m.parameters(recurse=False)}
    named = list(model.named_parameters())
    if len(named) != len(views):
        raise SystemExit(f"torch_check.py: {len(views)} syncsim views, {len(named)} PyTorch "
                         "parameters: not the same model")
    with torch.no_grad():
        for (tname, p), (sname, off, cnt) in zip(named, views):
            if p.numel() != cnt:
                raise SystemExit(f"torch_check.py: {sname} has {cnt} values, {tname} {p.numel()}")
            lin = mods[id(p)]
            shape = flat.get(id(lin)) if isinstance(lin, nn.Linear) and p.dim() == 2 else None
            p.copy_(torch.from_numpy(np.ascontiguousarray(
                to_torch_layout(params[off:off + cnt], p, shape))).to(p.dtype))
    model.train()
    # the smallest |input| of any ReLU relative to its tensor's RMS: where it is within float
    # rounding of zero, fp32 on either side may take the other branch there
    import torch.nn.functional as F
    near, relu = [float("inf")], F.relu

    def watch(t, *args, **kw):
        v = t.detach()
        near[0] = min(near[0], float(v.abs().min() / v.pow(2).mean().sqrt().clamp_min(1e-30)))
        return relu(t, *args, **kw)
    F.relu = watch
    try:
        loss = nn.CrossEntropyLoss()(model(xt), torch.from_numpy(y))
    finally:
        F.relu = relu
    loss.backward()
    worst, rows = 0.0, []
    err = abs(loss.item() - loss_s) / abs(loss_s)
    rows.append(("loss", err))
    worst = max(worst, err)
    for (tname, p), (sname, off, cnt) in zip(named, views):
        lin = mods[id(p)]
        shape = flat.get(id(lin)) if isinstance(lin, nn.Linear) and p.dim() == 2 else None
        g = to_torch_layout(grads[off:off + cnt], p, shape).astype(np.float64)
        d = p.grad.detach().numpy().astype(np.float64) - g
        e = np.linalg.norm(d) / max(np.linalg.norm(g), 1e-30)
        rows.append((f"{sname} grad", e))
        worst = max(worst, e)
    tbufs = [b for n, b in model.named_buffers() if not n.endswith("num_batches_tracked")]
    for b, (sname, off, cnt) in zip(tbufs, bviews):
        s = bufs[off:off + cnt].astype(np.float64)
        e = np.linalg.norm(b.numpy().astype(np.float64) - s) / max(np.linalg.norm(s), 1e-30)
        rows.append((sname, e))
        worst = max(worst, e)
    for n, e in rows:
        print(f"{n:<40} {e:.3g}")
    ok = worst <= a.tol
    print(f"{name} batch {batch}: loss {loss.item():.7g} (syncsim {loss_s:.7g}); "
          f"{len(rows)} checks, worst relative error {worst:.3g}: "
          f"{'within' if ok else 'OUTSIDE'} {a.tol:g}; smallest ReLU input {near[0]:.2g} of its "
          f"tensor's RMS{' (within fp32 rounding of zero: a ReLU may switch)' if near[0] < 1e-5 else ''}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
