#!/usr/bin/env python3
"""The parts of an eager PyTorch training step that the compute model's framework (`--framework
eager`, sim/compute/framework.c) has no constant for, measured apart from the steps they explain,
and whole steps timed the ways bench/ has timed them.

Tables (--tables, each printed as NAME VALUE lines and written to --csv):

  params    GPU time per parameter (ns; times the copy bandwidth in GB/s: bytes moved per
            parameter at that bandwidth) of the step's per-parameter kernels on 10 tensors of 10 M
            floats, and the copy bandwidth they are set against: zero_grad(set_to_none=False)'s
            fill, a gradient accumulated into an existing .grad (torch._foreach_add_, what
            AccumulateGrad does when .grad is kept), SGD with momentum and weight decay (foreach,
            for_loop and fused), autocast's cast of a weight to fp16 and of its gradient back, and
            GradScaler's unscale_ (torch._amp_foreach_non_finite_check_and_unscale_)
  autocast  the host's time per layer (us) of a forward and a backward pass through chains of 8
            and 64 near-empty dense and convolution layers, without and with autocast (fp16):
            the slope, as bench/torch_host.py measures it
  alexnet   torchvision's AlexNet at --alexnet-batch in fp32, tf32 and fp16 (as
            bench/torch_gpu.py --tables vision): the step (median of 3 windows of 20 steps), the
            GPU's busy time in it and its kernels by name (PyTorch profiler)
  steps     syncsim's mlp and cnn at batch 64 (bench/syncsim_torch.py), timed as
            bench/torch_layers.py --tables jitter (each step between CUDA events, momentum
            without weight decay: mean and median of 300), as bench/torch_gpu.py (windows of 100
            steps), and with what a training loop may add: torch.cuda.synchronize() after every
            step, loss.item() every step, zero_grad(set_to_none=True), the for-loop optimizer, and
            the batch copied from the host every step

It installs nothing: it needs PyTorch with CUDA (torchvision for the alexnet table).
Usage: torch_step_parts.py [--tables params,autocast,alexnet,steps] [--csv FILE]
                           [--alexnet-batch 128,512]
"""
import argparse
import csv
import os
import statistics
import sys
import time

try:
    import torch
    import torch.nn as nn
except ImportError:
    sys.stderr.write("torch_step_parts.py: PyTorch is not installed\n")
    sys.exit(2)

DEV = "cuda"
ROWS = []


def row(name, value):
    ROWS.append((name, value))
    print(f"{name:<52} {value:12.4f}", flush=True)


def gpu_ms(fn, reps=10, warmup=2):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(reps):
        fn()
    e.record()
    e.synchronize()
    return s.elapsed_time(e) / reps


def table_params(a):
    n, t = 10_000_000, 10
    total = n * t
    src = torch.randn(total, device=DEV)
    dst = torch.empty_like(src)
    ms = gpu_ms(lambda: dst.copy_(src))
    row("params_copy_GBps", 2 * 4 * total / (ms * 1e-3) * 1e-9)
    del src, dst
    params = [torch.randn(n, device=DEV, requires_grad=True) for _ in range(t)]
    for p in params:
        p.grad = torch.randn_like(p)
    news = [torch.randn_like(p) for p in params]
    per = lambda ms: ms * 1e6 / total  # ns per parameter
    opt = torch.optim.SGD(params, lr=1e-6, momentum=0.9, weight_decay=5e-4)
    row("params_zero_grad_fill_ns", per(gpu_ms(lambda: opt.zero_grad(set_to_none=False))))
    grads = [p.grad for p in params]
    row("params_accumulate_ns", per(gpu_ms(lambda: torch._foreach_add_(grads, news))))
    for kind, kw in (("foreach", {"foreach": True}), ("for_loop", {"foreach": False}),
                     ("fused", {"fused": True})):
        o = torch.optim.SGD(params, lr=1e-6, momentum=0.9, weight_decay=5e-4, **kw)
        o.step()  # the momentum buffers exist from here, as in every step after the first
        row(f"params_sgd_{kind}_ns", per(gpu_ms(o.step)))
        del o
    row("params_cast_fp16_ns", per(gpu_ms(lambda: [p.detach().to(torch.float16) for p in params])))
    halves = [p.detach().to(torch.float16) for p in params]
    row("params_cast_back_fp32_ns", per(gpu_ms(lambda: [h.to(torch.float32) for h in halves])))
    found = torch.zeros(1, device=DEV)
    inv = torch.ones(1, device=DEV)
    row("params_unscale_ns", per(gpu_ms(
        lambda: torch._amp_foreach_non_finite_check_and_unscale_(grads, found, inv))))
    del params, news, grads, halves
    torch.cuda.empty_cache()


def chain_host_us(factory, shape, k, amp, reps=5):
    torch.manual_seed(1)
    m = nn.Sequential(*[factory() for _ in range(k)]).to(DEV)
    x = torch.rand(*shape, device=DEV, requires_grad=True)

    def once():
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.autocast(DEV, dtype=torch.float16, enabled=amp):
            out = m(x).float().sum()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        out.backward()
        torch.cuda.synchronize()
        t3 = time.perf_counter()
        return (t1 - t0) * 1e6, (t3 - t2) * 1e6
    once()
    runs = [once() for _ in range(4 * reps)]
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


def table_autocast(a):
    kinds = {"linear": (lambda: nn.Linear(8, 8), (1, 8)),
             "conv": (lambda: nn.Conv2d(4, 4, 3, padding=1, bias=False), (2, 4, 8, 8))}
    for kind, (factory, shape) in kinds.items():
        for amp in (False, True):
            f8, b8 = chain_host_us(factory, shape, 8, amp)
            f64, b64 = chain_host_us(factory, shape, 64, amp)
            tag = "amp" if amp else "fp32"
            row(f"autocast_fwd_{kind}_{tag}_us", (f64 - f8) / 56)
            row(f"autocast_bwd_{kind}_{tag}_us", (b64 - b8) / 56)


def trainer(m, x, y, amp=False, wd=5e-4, set_to_none=False, foreach=None, item=False,
            sync=False, host_batch=None):
    kw = {} if foreach is None else {"foreach": foreach}
    opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9, weight_decay=wd, **kw)
    loss_fn = nn.CrossEntropyLoss()
    scaler = torch.amp.GradScaler("cuda") if amp else None

    def step():
        xb = host_batch.to(DEV, non_blocking=False) if host_batch is not None else x
        opt.zero_grad(set_to_none=set_to_none)
        if amp:
            with torch.autocast("cuda", dtype=torch.float16):
                loss = loss_fn(m(xb), y)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss = loss_fn(m(xb), y)
            loss.backward()
            opt.step()
        if item:
            loss.item()
        if sync:
            torch.cuda.synchronize()
    return step


def window_ms(step, steps, windows=3, warmup=5):
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    out = []
    for _ in range(windows):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(steps):
            step()
        e.record()
        e.synchronize()
        out.append(s.elapsed_time(e) / steps)
    return sorted(out)[len(out) // 2]


def busy_and_kernels(step, label, top=10):
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(3):
            step()
        torch.cuda.synchronize()
    evs = [ev for ev in prof.key_averages() if ev.device_type == torch.autograd.DeviceType.CUDA]
    busy = sum(ev.self_device_time_total for ev in evs) / 3 / 1000
    row(f"{label}_gpu_busy_ms", busy)
    for ev in sorted(evs, key=lambda ev: -ev.self_device_time_total)[:top]:
        print(f"    {ev.self_device_time_total / 3 / 1000:8.3f} ms  x{ev.count // 3:<4} "
              f"{ev.key[:110]}", flush=True)


def table_alexnet(a):
    import torchvision.models as tvm
    for b in [int(v) for v in a.alexnet_batch.split(",")]:
        for prec in ("fp32", "tf32", "fp16"):
            torch.backends.cuda.matmul.allow_tf32 = prec != "fp32"
            torch.backends.cudnn.allow_tf32 = prec != "fp32"
            torch.manual_seed(1)
            m = tvm.alexnet(weights=None).to(DEV)
            x = torch.rand(b, 3, 224, 224, device=DEV)
            y = torch.randint(0, 1000, (b,), device=DEV)
            if prec == "fp16":
                m = m.to(memory_format=torch.channels_last)
                x = x.contiguous(memory_format=torch.channels_last)
            step = trainer(m, x, y, amp=prec == "fp16")
            ms = window_ms(step, 20)
            row(f"alexnet_{prec}_b{b}_step_ms", ms)
            row(f"alexnet_{prec}_b{b}_images_per_s", b / ms * 1e3)
            busy_and_kernels(step, f"alexnet_{prec}_b{b}")
            del m, x, y, step
            torch.cuda.empty_cache()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


def table_steps(a):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import syncsim_torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    for name in ("mlp", "cnn"):
        torch.manual_seed(1)
        m = syncsim_torch.build(name).to(DEV)
        x = torch.rand(64, 1, 28, 28, device=DEV)
        y = torch.randint(0, 10, (64,), device=DEV)
        # as bench/torch_layers.py --tables jitter: momentum without weight decay, an event
        # after every step
        step = trainer(m, x, y, wd=0)
        for _ in range(10):
            step()
        n = 300
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(n + 1)]
        torch.cuda.synchronize()
        ev[0].record()
        for i in range(n):
            step()
            ev[i + 1].record()
        ev[n].synchronize()
        t = sorted(ev[i].elapsed_time(ev[i + 1]) for i in range(n))
        row(f"step_{name}_jitter_mean_ms", sum(t) / n)
        row(f"step_{name}_jitter_median_ms", t[n // 2])
        row(f"step_{name}_jitter_p99_ms", t[int(0.99 * (n - 1))])
        variants = (("windows", {}), ("sync_each", {"sync": True}), ("item_each", {"item": True}),
                    ("set_to_none", {"set_to_none": True}), ("for_loop_sgd", {"foreach": False}),
                    ("host_batch", {"host_batch": x.cpu().pin_memory()}),
                    ("windows_again", {}))
        for label, kw in variants:
            row(f"step_{name}_{label}_ms", window_ms(trainer(m, x, y, **kw), 100))
        busy_and_kernels(trainer(m, x, y), f"step_{name}", top=0)
        del m, x, y
        torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tables", default="params,autocast,alexnet,steps")
    ap.add_argument("--alexnet-batch", default="128,512")
    ap.add_argument("--csv", default="")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("torch_step_parts.py: no CUDA device visible to PyTorch")
    torch.backends.cudnn.benchmark = True
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}, cudnn.benchmark on",
          flush=True)
    tables = {"params": table_params, "autocast": table_autocast, "alexnet": table_alexnet,
              "steps": table_steps}
    for t in a.tables.split(","):
        if t not in tables:
            raise SystemExit(f"torch_step_parts.py: unknown table '{t}' (valid: "
                             f"{', '.join(tables)})")
        t0 = time.time()
        try:
            tables[t](a)
        except Exception as ex:  # one table's failure (torchvision missing) leaves the others
            sys.stderr.write(f"torch_step_parts.py: table {t}: {ex}\n")
        print(f"({t}: {time.time() - t0:.0f} s)", flush=True)
        if a.csv:
            with open(a.csv, "w", newline="") as f:
                w = csv.writer(f)
                w.writerow(["quantity", "value", "torch", "gpu"])
                for name, v in ROWS:
                    w.writerow([name, f"{v:.4f}", torch.__version__,
                                torch.cuda.get_device_name(0)])


if __name__ == "__main__":
    main()
