#!/usr/bin/env python3
"""The host's share of a PyTorch training step on a GPU, by micro-benchmarks of near-empty work:
what the framework costs per operation it issues, independent of the kernels' own time. These are
the constants of the compute model's host timeline (`--framework`), measured here and never
fitted to the steps they predict.

Each row is a time in microseconds, the median of 5 repetitions:

  launch_gpu_us        device time per kernel of back-to-back tiny kernels (the GPU held busy by
                       torch.cuda._sleep while the host queues them, so the host is never behind)
  graph_kernel_us      device time per kernel of a CUDA graph of tiny kernels, replayed
  issue_tiny_add_us    host time to issue one tiny eager operation (torch.add out=, 1 element)
  issue_OP_us          the same for the operators a training step issues (linear, conv2d,
                       batch_norm, relu, max_pool2d, adaptive_avg_pool2d, add, cross_entropy)
  fwd_KIND_us          host time per layer of a forward pass with autograd recording, KIND one of
                       linear (8x8, batch 1), conv (3x3, 4 channels, 8x8 maps, batch 2), bn,
                       relu, add (residual): the slope over chains of 8 and 64 such layers
  bwd_KIND_us          the backward pass's time per layer of the same chains, until the GPU is
                       done (tiny kernels: the host's issuing is what it measures)
  fwd_pass_us          a forward pass's fixed cost (the chains' intercept, median over kinds)
  bwd_pass_us          a backward pass's fixed cost (the same for backward)
  loss_fwd_us          a cross-entropy loss's forward on 64x10 logits
  loss_bwd_us          a backward pass through that loss alone (its fixed cost included)
  opt_TYPE_tensor_us   SGD with momentum and weight decay, per parameter tensor (slope over 10
                       and 200 tensors of 1,000 floats): TYPE for_loop, foreach, fused
  opt_TYPE_step_us     the same optimizer's fixed cost per step (intercept)
  zero_grad_tensor_us  zero_grad(set_to_none=True) per parameter tensor
  zero_grad_fill_tensor_us  zero_grad(set_to_none=False) per parameter tensor (a fill kernel)
  sync_item_us         a scalar read back to the host (.item()) after a tiny kernel: round trip
  mix_PHASE_KIND_us    per-kind host costs of a step's forward (fwd) and backward (bwd) passes:
                       least squares over --mixes random sequences of 24 near-empty layers of the
                       kinds linear, conv, bn, relu, pool, add (their proportions drawn per
                       sequence), closed by a dense layer and the loss; mix_PHASE_pass_us is the
                       intercept, mix_PHASE_rms_err_us the fit's residual; mix_zero_grad_* and
                       mix_opt_* the per-step and per-tensor costs of zero_grad and SGD (foreach)
  step_M_bB_PHASE_us   a whole eager step of syncsim's model M (bench/syncsim_torch.py) at batch
                       B, as bench/torch_gpu.py runs it: the host's time in each PHASE of a step
                       started on an idle GPU (zero_grad, forward with the loss, backward,
                       optimizer; host: all four), synced (the step with the wait for the GPU),
                       pipelined (steady steps without a wait, CUDA events) and gpu_busy (the
                       kernels' time, PyTorch profiler)

It installs nothing: it needs PyTorch with CUDA.
Usage: torch_host.py [--csv FILE] [--reps N] [--steps M1,M2,...] [--steps-batch B] [--mixes N]
                     [--only mix]
"""
import argparse
import csv
import statistics
import sys
import time

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:
    sys.stderr.write("torch_host.py: PyTorch is not installed\n")
    sys.exit(2)

DEV = "cuda"


def med(fn, reps):
    fn()  # warm-up (allocator, lazy kernel loading)
    return statistics.median(fn() for _ in range(reps))


def host_loop(op, n):
    """Host microseconds per call of op, issued n times back to back (the GPU synchronized before
    and after, outside the timed span)."""
    def once():
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            op()
        t = time.perf_counter() - t0
        torch.cuda.synchronize()
        return t / n * 1e6
    return once


def launch_gpu(n):
    a = torch.ones(1, device=DEV)
    c = torch.empty_like(a)

    def once():
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        # tens of ms, while the host queues n kernels (n below the launch queue's length)
        torch.cuda._sleep(100_000_000)
        s.record()
        for _ in range(n):
            torch.add(a, a, out=c)
        e.record()
        e.synchronize()
        return s.elapsed_time(e) * 1e3 / n
    return once


def graph_kernel(n):
    a = torch.ones(1, device=DEV)
    c = torch.empty_like(a)
    g = torch.cuda.CUDAGraph()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        torch.add(a, a, out=c)
    torch.cuda.current_stream().wait_stream(side)
    with torch.cuda.graph(g):
        for _ in range(n):
            torch.add(a, a, out=c)

    def once():
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        g.replay()
        e.record()
        e.synchronize()
        return s.elapsed_time(e) * 1e3 / n
    return once


class Add(nn.Module):
    """A residual addition as a chain link, one kernel: x + (-0.5) x, which keeps the values of a
    long chain finite."""

    def forward(self, x):
        return torch.add(x, x, alpha=-0.5)


LAYER_KINDS = {  # kind: (module factory, input shape)
    "linear": (lambda: nn.Linear(8, 8), (1, 8)),
    "conv": (lambda: nn.Conv2d(4, 4, 3, padding=1, bias=False), (2, 4, 8, 8)),
    "bn": (lambda: nn.BatchNorm2d(4), (2, 4, 8, 8)),
    "relu": (nn.ReLU, (2, 4, 8, 8)),
    "add": (Add, (2, 4, 8, 8)),
}


def fwd_bwd_per_layer(kind, reps):
    """Host microseconds per layer of one kind in a training step's forward (autograd recording)
    and backward (until the GPU is done): the slope over chains of 8 and 64 layers, which leaves
    the fixed costs of a pass out."""
    factory, shape = LAYER_KINDS[kind]
    x = torch.rand(*shape, device=DEV, requires_grad=True)
    times = {}
    for k in (8, 64):
        torch.manual_seed(1)
        m = nn.Sequential(*[factory() for _ in range(k)]).to(DEV)

        def fwd():
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            out = m(x).sum()
            t = time.perf_counter() - t0
            torch.cuda.synchronize()
            return t * 1e6, out

        def fwd_only():
            return fwd()[0]

        def bwd_only():
            _, out = fwd()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            out.backward()
            torch.cuda.synchronize()
            return (time.perf_counter() - t0) * 1e6
        times[k] = (med(fwd_only, reps), med(bwd_only, reps))
    fwd, bwd = (times[64][0] - times[8][0]) / 56, (times[64][1] - times[8][1]) / 56
    return fwd, bwd, times[8][0] - 8 * fwd, times[8][1] - 8 * bwd


def loss_costs(reps):
    """Host microseconds of a cross-entropy loss's forward and of a backward pass through it
    alone (the backward pass's fixed cost included), on 64x10 logits."""
    logits = torch.rand(64, 10, device=DEV, requires_grad=True)
    y = torch.zeros(64, dtype=torch.long, device=DEV)

    def fwd():
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = F.cross_entropy(logits, y)
        t = time.perf_counter() - t0
        torch.cuda.synchronize()
        return t * 1e6, out

    def bwd():
        _, out = fwd()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        out.backward()
        torch.cuda.synchronize()
        return (time.perf_counter() - t0) * 1e6
    return med(lambda: fwd()[0], reps), med(bwd, reps)


def optimizer_costs(kind, reps):
    per = {}
    for t in (10, 200):
        params = [torch.zeros(1000, device=DEV, requires_grad=True) for _ in range(t)]
        for p in params:
            p.grad = torch.ones_like(p)
        kw = {"for_loop": {"foreach": False}, "foreach": {"foreach": True},
              "fused": {"fused": True}}[kind]
        opt = torch.optim.SGD(params, lr=0.01, momentum=0.9, weight_decay=5e-4, **kw)

        def once():
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(20):
                opt.step()
            torch.cuda.synchronize()
            return (time.perf_counter() - t0) / 20 * 1e6
        per[t] = med(once, reps)
    slope = (per[200] - per[10]) / 190
    return slope, per[10] - 10 * slope


def zero_grad_per_tensor(reps, to_none):
    per = {}
    for t in (10, 200):
        params = [torch.zeros(1000, device=DEV, requires_grad=True) for _ in range(t)]
        opt = torch.optim.SGD(params, lr=0.01)

        def once():
            for p in params:
                p.grad = torch.ones_like(p)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            opt.zero_grad(set_to_none=to_none)
            t = time.perf_counter() - t0
            torch.cuda.synchronize()
            return t * 1e6
        per[t] = med(once, reps)
    return (per[200] - per[10]) / 190


def issue_ops():
    """One tiny operator per kind a training step issues, as closures."""
    x4 = torch.rand(2, 4, 8, 8, device=DEV)
    w3 = torch.rand(4, 4, 3, 3, device=DEV)
    xl = torch.rand(2, 8, device=DEV)
    wl = torch.rand(8, 8, device=DEV)
    bl = torch.rand(8, device=DEV)
    rm, rv = torch.zeros(4, device=DEV), torch.ones(4, device=DEV)
    g, b = torch.ones(4, device=DEV), torch.zeros(4, device=DEV)
    y = torch.zeros(2, dtype=torch.long, device=DEV)
    return {
        "linear": lambda: F.linear(xl, wl, bl),
        "conv2d": lambda: F.conv2d(x4, w3, padding=1),
        "batch_norm": lambda: F.batch_norm(x4, rm, rv, g, b, training=True),
        "relu": lambda: F.relu(x4),
        "max_pool2d": lambda: F.max_pool2d(x4, 2),
        "adaptive_avg_pool2d": lambda: F.adaptive_avg_pool2d(x4, 1),
        "add": lambda: x4 + x4,
        "cross_entropy": lambda: F.cross_entropy(xl, y),
    }


def sync_item(reps):
    a = torch.ones(1, device=DEV)

    def once():
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(200):
            (a + 1).item()
        return (time.perf_counter() - t0) / 200 * 1e6
    return med(once, reps)


def sgd_step_timer(m, x, y, warmup):
    """An eager training step of m on (x, y) as bench/torch_gpu.py runs it, warmed up; returns
    the step and a function timing one step started on an idle GPU: the host's microseconds of
    zero_grad, forward with the loss, backward, optimizer, the four together, and the step
    with the wait for the GPU."""
    opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=False)
        loss_fn(m(x), y).backward()
        opt.step()

    for _ in range(warmup):
        step()

    def phases():
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=False)
        t1 = time.perf_counter()
        loss = loss_fn(m(x), y)
        t2 = time.perf_counter()
        loss.backward()
        t3 = time.perf_counter()
        opt.step()
        t4 = time.perf_counter()
        torch.cuda.synchronize()
        t5 = time.perf_counter()
        return [(t1 - t0) * 1e6, (t2 - t1) * 1e6, (t3 - t2) * 1e6, (t4 - t3) * 1e6,
                (t4 - t0) * 1e6, (t5 - t0) * 1e6]
    return step, phases


def step_phases(name, batch, reps):
    """One of syncsim's models (bench/syncsim_torch.py) in an eager training step as
    bench/torch_gpu.py runs it: the host's time in each phase of a step started on an idle GPU
    (zero_grad, forward with the loss, backward, optimizer), the step synchronized every time,
    and the steady rate of unsynchronized steps (CUDA events over 50 steps)."""
    import syncsim_torch
    torch.manual_seed(1)
    m = syncsim_torch.build(name).to(DEV)
    x = torch.rand(batch, 1, 28, 28, device=DEV)
    y = torch.randint(0, 10, (batch,), device=DEV)
    step, phases = sgd_step_timer(m, x, y, 5)
    runs = [phases() for _ in range(20 * reps)]
    out = [statistics.median(r[i] for r in runs) for i in range(6)]
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    rates = []
    for _ in range(3):
        s.record()
        for _ in range(50):
            step()
        e.record()
        e.synchronize()
        rates.append(s.elapsed_time(e) * 1e3 / 50)
    out.append(statistics.median(rates))
    try:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(5):
                step()
            torch.cuda.synchronize()
        busy = sum(ev.self_device_time_total for ev in prof.key_averages()
                   if ev.device_type == torch.autograd.DeviceType.CUDA) / 5
    except Exception as ex:  # a diagnostic only
        sys.stderr.write(f"profiler: {ex}\n")
        busy = float("nan")
    out.append(busy)
    kinds = {}
    for mod in m.modules():
        if len(list(mod.children())) == 0:
            kinds[type(mod).__name__] = kinds.get(type(mod).__name__, 0) + 1
    return out, len(list(m.parameters())), kinds


MIX_KINDS = ("linear", "conv", "bn", "relu", "pool", "add")


def mix_module(kind):
    """A near-empty layer that keeps a (2, 4, 8, 8) activation's shape."""
    return {"linear": lambda: nn.Linear(8, 8),  # over the last dimension
            "conv": lambda: nn.Conv2d(4, 4, 3, padding=1, bias=False),
            "bn": lambda: nn.BatchNorm2d(4),
            "relu": nn.ReLU,
            "pool": lambda: nn.MaxPool2d(3, 1, 1),
            "add": Add}[kind]()


def mixes(n, length, seed):
    """n random sequences of near-empty layers of every kind, as real models mix them: the host's
    cost of each kind comes from a regression over them, not from one operation repeated."""
    import random
    rnd = random.Random(seed)
    out = []
    for _ in range(n):
        weights = [rnd.random() for _ in MIX_KINDS]
        out.append([rnd.choices(MIX_KINDS, weights)[0] for _ in range(length)])
    return out


def mix_phases(seq, reps):
    """Host microseconds of zero_grad, forward with the loss, backward and optimizer of a step
    of the near-empty model seq (flatten, dense 256->10 and cross-entropy closing it), started on
    an idle GPU; and its parameter tensors."""
    torch.manual_seed(1)
    m = nn.Sequential(*[mix_module(k) for k in seq], nn.Flatten(), nn.Linear(256, 10)).to(DEV)
    x = torch.rand(2, 4, 8, 8, device=DEV)
    y = torch.zeros(2, dtype=torch.long, device=DEV)
    _, phases = sgd_step_timer(m, x, y, 3)
    runs = [phases() for _ in range(10 * reps)]
    return [statistics.median(r[i] for r in runs) for i in range(4)], len(list(m.parameters()))


def table_mix(a):
    """Per-kind host costs by least squares over random mixes; returns rows and the raw data."""
    import numpy as np
    raw = []
    for seq in mixes(a.mixes, 24, 1):
        ph, tensors = mix_phases(seq, a.reps)
        counts = [seq.count(k) for k in MIX_KINDS]
        raw.append((counts, tensors, ph))
    rows = []
    X = np.array([[1.0] + c for c, _, _ in raw])
    for j, phase in ((1, "fwd"), (2, "bwd")):
        yv = np.array([p[j] for _, _, p in raw])
        coef, *_ = np.linalg.lstsq(X, yv, rcond=None)
        pred = X @ coef
        rows.append((f"mix_{phase}_pass_us", coef[0]))
        for k, c in zip(MIX_KINDS, coef[1:]):
            rows.append((f"mix_{phase}_{k}_us", c))
        rows.append((f"mix_{phase}_rms_err_us", float(np.sqrt(np.mean((pred - yv) ** 2)))))
    T = np.array([[1.0, t] for _, t, _ in raw])
    for j, phase in ((0, "zero_grad"), (3, "opt")):
        yv = np.array([p[j] for _, _, p in raw])
        coef, *_ = np.linalg.lstsq(T, yv, rcond=None)
        rows.append((f"mix_{phase}_step_us", coef[0]))
        rows.append((f"mix_{phase}_tensor_us", coef[1]))
    return rows, raw


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--csv", default="")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--steps", default="mlp,cnn,cnn:lenet,resnet:20,vgg:11",
                    help="syncsim models whose whole steps are timed by phase ('' for none)")
    ap.add_argument("--steps-batch", type=int, default=64)
    ap.add_argument("--mixes", type=int, default=16,
                    help="random mixes of near-empty layers for the per-kind regression (0: none)")
    ap.add_argument("--only", default="", choices=("", "mix", "steps"),
                    help="mix or steps: that table alone")
    ap.add_argument("--cudnn-benchmark", choices=("on", "off"), default="off",
                    help="cuDNN's algorithm search (PyTorch's default: off)")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("torch_host.py: no CUDA device visible to PyTorch")
    torch.backends.cudnn.benchmark = a.cudnn_benchmark == "on"
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}, cudnn.benchmark "
          f"{a.cudnn_benchmark}", flush=True)
    rows = []

    def row(name, value):
        rows.append((name, value))
        print(f"{name:<28} {value:9.2f} us", flush=True)

    if a.only == "mix":
        run_mix(a, row)
        write_csv(a, rows)
        return
    if a.only == "steps":
        run_steps(a, row)
        write_csv(a, rows)
        return
    row("launch_gpu_us", med(launch_gpu(500), a.reps))
    row("graph_kernel_us", med(graph_kernel(2000), a.reps))
    a1 = torch.ones(1, device=DEV)
    c1 = torch.empty_like(a1)
    row("issue_tiny_add_us", med(host_loop(lambda: torch.add(a1, a1, out=c1), 5000), a.reps))
    for name, op in issue_ops().items():
        row(f"issue_{name}_us", med(host_loop(op, 1000), a.reps))
    fixed_f, fixed_b = [], []
    for kind in LAYER_KINDS:
        fwd, bwd, f0, b0 = fwd_bwd_per_layer(kind, a.reps)
        row(f"fwd_{kind}_us", fwd)
        row(f"bwd_{kind}_us", bwd)
        fixed_f.append(f0)
        fixed_b.append(b0)
    row("fwd_pass_us", statistics.median(fixed_f))
    row("bwd_pass_us", statistics.median(fixed_b))
    lf, lb = loss_costs(a.reps)
    row("loss_fwd_us", lf)
    row("loss_bwd_us", lb)
    for kind in ("for_loop", "foreach", "fused"):
        slope, icpt = optimizer_costs(kind, a.reps)
        row(f"opt_{kind}_tensor_us", slope)
        row(f"opt_{kind}_step_us", icpt)
    row("zero_grad_tensor_us", zero_grad_per_tensor(a.reps, True))
    row("zero_grad_fill_tensor_us", zero_grad_per_tensor(a.reps, False))
    row("sync_item_us", sync_item(a.reps))
    run_steps(a, row)
    if a.mixes > 0:
        run_mix(a, row)
    write_csv(a, rows)


def run_steps(a, row):
    names = ("zero_grad", "forward", "backward", "optimizer", "host", "synced", "pipelined",
             "gpu_busy")
    for name in [n for n in a.steps.split(",") if n]:
        vals, tensors, kinds = step_phases(name, a.steps_batch, a.reps)
        for n, v in zip(names, vals):
            row(f"step_{name}_b{a.steps_batch}_{n}_us", v)
        print(f"  {name}: {tensors} parameter tensors, layers {kinds}", flush=True)


def run_mix(a, row):
    mix_rows, raw = table_mix(a)
    for name, v in mix_rows:
        row(name, v)
    for counts, tensors, ph in raw:
        print("  mix " + " ".join(f"{k}={c}" for k, c in zip(MIX_KINDS, counts)) +
              f" tensors={tensors} zero_grad={ph[0]:.1f} fwd={ph[1]:.1f} bwd={ph[2]:.1f} "
              f"opt={ph[3]:.1f}", flush=True)


def write_csv(a, rows):
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["quantity", "us", "torch", "gpu"])
            for name, v in rows:
                w.writerow([name, f"{v:.3f}", torch.__version__, torch.cuda.get_device_name(0)])


if __name__ == "__main__":
    main()
