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

Where step_dump wrote the outputs of the model's ReLUs (relu.f32: resnet's, LeNet's and the
mlp's; not the cnn's or vgg's, whose convolution or batch norm runs with its ReLU and max-pool as
one block that does not keep the ReLU's output), each ReLU here takes
syncsim's decisions (its output positive or not) instead of its own, so that an input within
rounding of zero goes the same way on both sides; the script counts the inputs where the two
differ and prints the largest of them relative to its tensor's RMS (within rounding of zero:
below about 1e-5; a larger one would be a wrong ReLU).

With --double PyTorch runs in float64: the reference is then the exact step, and only syncsim's
rounding (and a ReLU it switches) remains.

A language model (gpt:wlm, gpt:L,D,H,T[,P]) reads the dump's token batch (B samples of T + 1 ids:
the first T are the inputs, each predicting the next) and vocabulary, keeps every parameter's
layout (syncsim's dense weights are (out, in) as nn.Linear's, its embeddings (V, D) and
positions (T, D) as nn.Embedding's), and gives every dropout site the mask syncsim's step drew
(dropout.f32), so that the dropout is checked too; the loss is the mean cross-entropy over the
B T predictions. It also checks the written-out attention (syncsim_torch.Attention) against
nn.MultiheadAttention with the same weights on a causal mask, without dropout.

Usage: torch_check.py DIR [--tol X] [--threads T] [--double]
"""
import argparse
import os
import sys

try:
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
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


def load_params(model, params, views, shape_of):
    """Copies syncsim's flat parameters into the model's (same order) in PyTorch's layout."""
    named = list(model.named_parameters())
    if len(named) != len(views):
        raise SystemExit(f"torch_check.py: {len(views)} syncsim views, {len(named)} PyTorch "
                         "parameters: not the same model")
    with torch.no_grad():
        for (tname, p), (sname, off, cnt) in zip(named, views):
            if p.numel() != cnt:
                raise SystemExit(f"torch_check.py: {sname} has {cnt} values, {tname} {p.numel()}")
            p.copy_(torch.from_numpy(np.ascontiguousarray(
                shape_of(params[off:off + cnt], p))).to(p.dtype))
    return named


def grad_rows(named, grads, views, shape_of):
    rows = []
    for (tname, p), (sname, off, cnt) in zip(named, views):
        g = shape_of(grads[off:off + cnt], p).astype(np.float64)
        d = p.grad.detach().numpy().astype(np.float64) - g
        rows.append((f"{sname} grad", np.linalg.norm(d) / max(np.linalg.norm(g), 1e-30)))
    return rows


def report(name, batch, loss, loss_s, rows, tol, note):
    worst = max(e for _, e in rows)
    for n, e in rows:
        print(f"{n:<40} {e:.3g}")
    ok = worst <= tol
    print(f"{name} batch {batch}: loss {loss:.7g} (syncsim {loss_s:.7g}); "
          f"{len(rows)} checks, worst relative error {worst:.3g}: "
          f"{'within' if ok else 'OUTSIDE'} {tol:g}{note}")
    return 0 if ok else 1


def read_relus(d, batch):
    """step_dump's ReLU outputs: a list of (name, boolean mask in NCHW) in forward order, or []"""
    path = os.path.join(d, "relu_views.txt")
    if not os.path.exists(path):
        return []
    out = np.fromfile(os.path.join(d, "relu.f32"), dtype=np.float32)
    relus = []
    for line in open(path):
        name, off, cnt, h, w, c = line.split()
        off, cnt, h, w, c = int(off), int(cnt), int(h), int(w), int(c)
        if cnt != batch * h * w * c or off + cnt > out.size:
            raise SystemExit(f"torch_check.py: {path}: {name}: {cnt} values at {off} do not fit")
        relus.append((name, out[off:off + cnt].reshape(batch, h, w, c).transpose(0, 3, 1, 2) > 0))
    return relus


def relu_note(near):
    return (f"; smallest ReLU input {near:.2g} of its tensor's RMS"
            f"{' (within fp32 rounding of zero: a ReLU may switch)' if near < 1e-5 else ''}")


def attention_vs_pytorch(model, dtype):
    """The largest relative error of syncsim_torch.Attention against nn.MultiheadAttention with
    the same weights, on a causal mask in eval mode, over the model's attentions."""
    worst = 0.0
    gen = torch.Generator().manual_seed(0)
    for att in (m for m in model.modules() if isinstance(m, syncsim_torch.Attention)):
        d = att.in_proj_weight.shape[1]
        ref = nn.MultiheadAttention(d, att.heads, batch_first=True).to(dtype).eval()
        ref.load_state_dict({k: v for k, v in att.state_dict().items()})
        x = torch.randn(2, 7, d, generator=gen, dtype=dtype)
        mask = syncsim_torch.causal_mask(7, dtype)
        was = att.training
        att.eval()
        with torch.no_grad():
            mine = att(x)[0]
            theirs = ref(x, x, x, attn_mask=mask, need_weights=False)[0]
        att.train(was)
        worst = max(worst, float((mine - theirs).norm() / theirs.norm()))
    return worst


def check_language_model(a, meta, raw, views):
    name, batch = meta["model"].strip(), int(meta["batch"])
    vocab, loss_s = int(meta["vocab"]), float(meta["loss"])
    dtype = torch.float64 if a.double else torch.float32
    torch.manual_seed(0)
    model = syncsim_torch.build(name, classes=vocab).to(dtype)
    tokens = torch.from_numpy(raw("x.f32", np.float32).astype(np.int64)).reshape(batch, -1)
    named = load_params(model, raw("params.f32", np.float32), views,
                        lambda arr, p: arr.reshape(p.shape))
    masks, mviews = raw("dropout.f32", np.float32), read_views(os.path.join(a.dir,
                                                                             "dropout_views.txt"))
    sites = model.dropout_sites()
    active = [s for s, m in sites.items() if m.p > 0]
    if sorted(active) != sorted(v[0] for v in mviews):
        raise SystemExit(f"torch_check.py: syncsim's dropout sites {[v[0] for v in mviews]}, "
                         f"PyTorch's {active}: not the same model")
    dropped = 0
    for site, off, cnt in mviews:
        sites[site].mask = torch.from_numpy(masks[off:off + cnt].copy())
        dropped += int((masks[off:off + cnt] == 0).sum())
    # the smallest |input| of any ReLU (wlm's MLP) relative to its tensor's RMS
    near = [float("inf")]

    def watch(t):
        v = t.detach()
        near[0] = min(near[0], float(v.abs().min() / v.pow(2).mean().sqrt().clamp_min(1e-30)))
        return F.relu(t)
    relus = [m for m in model.modules() if isinstance(m, nn.TransformerEncoderLayer)]
    for m in relus:
        m.activation = watch
    model.train()
    logits = model(tokens[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, vocab), tokens[:, 1:].reshape(-1))
    loss.backward()
    rows = [("loss", abs(loss.item() - loss_s) / abs(loss_s))]
    rows += grad_rows(named, raw("grads.f32", np.float32), views,
                      lambda arr, p: arr.reshape(p.shape))
    att = attention_vs_pytorch(model, dtype)
    n_masked = sum(c for _, _, c in mviews)
    note = (f"; {len(mviews)} dropout masks applied ({dropped} of {n_masked} elements dropped)"
            f"; Attention against nn.MultiheadAttention {att:.2g}")
    if relus:
        note += relu_note(near[0])
    return report(name, batch, loss.item(), loss_s, rows, a.tol, note) or \
        (0 if att <= a.tol else 1)


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
    views = read_views(os.path.join(a.dir, "views.txt"))
    if name.partition(":")[0] == "gpt":
        return check_language_model(a, meta, raw, views)
    params, grads, bufs = raw("params.f32", np.float32), raw("grads.f32", np.float32), \
        raw("buffers.f32", np.float32)
    x = raw("x.f32", np.float32).reshape(batch, 28, 28, 1).transpose(0, 3, 1, 2)
    y = raw("y.u8", np.uint8).astype(np.int64)
    bviews = read_views(os.path.join(a.dir, "buffer_views.txt"))

    torch.manual_seed(0)
    model = syncsim_torch.build(name)
    xt = torch.from_numpy(np.ascontiguousarray(x))
    if a.double:
        model, xt = model.double(), xt.double()
    flat = flatten_shapes(model, xt)
    mods = {id(p): m for m in model.modules() for p in m.parameters(recurse=False)}

    def shape_of(arr, p):
        lin = mods[id(p)]
        shape = flat.get(id(lin)) if isinstance(lin, nn.Linear) and p.dim() == 2 else None
        return to_torch_layout(arr, p, shape)
    named = load_params(model, params, views, shape_of)
    model.train()
    # the smallest |input| of any ReLU relative to its tensor's RMS: where it is within float
    # rounding of zero, fp32 on either side may take the other branch there; with syncsim's
    # decisions (read_relus) each ReLU takes them, and the inputs where they differ are counted
    near, relu = [float("inf")], F.relu
    relus, calls, switched = read_relus(a.dir, batch), [0], []

    def watch(t, *args, **kw):
        v = t.detach()
        rms = v.pow(2).mean().sqrt().clamp_min(1e-30)
        near[0] = min(near[0], float(v.abs().min() / rms))
        if not relus:
            return relu(t, *args, **kw)
        if calls[0] >= len(relus):
            raise SystemExit(f"torch_check.py: the model has more ReLUs than the dump's "
                             f"{len(relus)}: not the same model")
        rname, theirs = relus[calls[0]]
        calls[0] += 1
        mask = torch.from_numpy(np.ascontiguousarray(theirs))
        if t.dim() == 2 and mask.shape[2:] == (1, 1):  # a dense layer's: (B, C) here
            mask = mask.reshape(mask.shape[:2])
        if mask.shape != t.shape:
            raise SystemExit(f"torch_check.py: {rname}: shape {tuple(mask.shape)} against "
                             f"{tuple(t.shape)}: not the same model")
        other = (v > 0) != mask
        if other.any():
            switched.append((int(other.sum()), float(v[other].abs().max() / rms)))
        return t * mask.to(t.dtype)
    F.relu = watch
    try:
        loss = nn.CrossEntropyLoss()(model(xt), torch.from_numpy(y))
    finally:
        F.relu = relu
    if relus and calls[0] != len(relus):
        raise SystemExit(f"torch_check.py: the model ran {calls[0]} ReLUs, the dump has "
                         f"{len(relus)}: not the same model")
    note = relu_note(near[0])
    if relus:
        n = sum(c for c, _ in switched)
        note += (f"; syncsim's ReLU decisions taken: {n} input(s) went the other way"
                 + (f", the largest {max(m for _, m in switched):.2g} of its tensor's RMS"
                    if n else ""))
    loss.backward()
    rows = [("loss", abs(loss.item() - loss_s) / abs(loss_s))]
    rows += grad_rows(named, grads, views, shape_of)
    tbufs = [b for n, b in model.named_buffers() if not n.endswith("num_batches_tracked")]
    for b, (sname, off, cnt) in zip(tbufs, bviews):
        s = bufs[off:off + cnt].astype(np.float64)
        e = np.linalg.norm(b.numpy().astype(np.float64) - s) / max(np.linalg.norm(s), 1e-30)
        rows.append((sname, e))
    return report(name, batch, loss.item(), loss_s, rows, a.tol, note)


if __name__ == "__main__":
    sys.exit(main())
