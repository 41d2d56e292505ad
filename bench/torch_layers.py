#!/usr/bin/env python3
"""Where a training step's time goes on one GPU, layer by layer, in PyTorch: the measurements
that syncsim's per-layer compute model (`--compute model`, sim/compute/compute.c) is checked against.

Five tables, each written as CSV into --out DIR:

  steps.csv   whole training steps (forward, loss, backward, SGD with momentum) of torchvision
              models, images/s, and the time the GPU is busy in a step (profiler): where busy is
              well below the step, the step is bound by the host (Python and kernel launches).
  layers.csv  every layer call of one forward pass, run alone on the same input shape: forward
              and backward (gradients of the input and the parameters) times, with the layer's
              shapes and the layer of traces/profiles/<model>.profile it belongs to, so that
              `syncsim validate compute --throughputs layers.csv` sets each against the model
              (resnet50, resnet101, vgg16, alexnet). Residual additions (not modules in
              torchvision) are timed at their shapes too.
  gemm.csv    matrix products of the shapes convolutions become (M x N x K), TFLOP/s; with
              --gemm-batches B1,B2,... the convolutions' products again with M = B x pixels for
              each batch B (how the rate grows with M).
  memory.csv  element-wise kernels (copy, ReLU, add) from 64 KiB to 1 GiB: GB/s and the time of
              a small kernel launched back to back.
  jitter.csv  --jitter-steps consecutive steps, each timed alone: the coefficient of variation of
              step times on a dedicated GPU (ResNet-50, and syncsim's mlp and cnn in PyTorch).

cuDNN's algorithm search (`torch.backends.cudnn.benchmark`) is on throughout, as in NVIDIA's and
TensorFlow's published benchmarks (bench/torch_gpu.py --cudnn-benchmark off gives the other mode).
fp32 has TF32 off, tf32 has it on, fp16 is autocast in channels-last as mixed-precision training
runs it. Times are CUDA events: the mean of a window of --reps calls after warm-up calls. With
--timing kernels the layers table gives instead the GPU kernels' own time in each window
(torch.profiler, the kernels that ran between the window's start and its synchronized end):
a layer whose kernels are shorter than the host's time to issue them is timed by its kernels,
not by the host.

Usage: torch_layers.py --out DIR [--models resnet50,resnet101,vgg16] [--precisions fp32,tf32,fp16]
                       [--batch 128] [--reps 20] [--tables steps,layers,gemm,memory,jitter]
                       [--gpu CLASS] [--gemm-batches 32,64,128,256] [--timing events|kernels]
It installs nothing: it needs PyTorch with CUDA and torchvision.
"""
import argparse
import csv
import os
import sys
import time

try:
    import torch
    import torch.nn as nn
    import torchvision.models as tvm
except ImportError as e:
    sys.stderr.write("torch_layers.py: %s\n" % e)
    sys.exit(2)

DEV = "cuda"


def set_prec(prec):
    on = prec != "fp32"
    torch.backends.cuda.matmul.allow_tf32 = on
    torch.backends.cudnn.allow_tf32 = on


def autocast(prec):
    return torch.autocast(DEV, dtype=torch.float16, enabled=prec == "fp16")


def window_ms(fn, reps, warmup=3):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(reps):
        fn()
    b.record()
    b.synchronize()
    return a.elapsed_time(b) / reps


def build(name, prec, batch):
    torch.manual_seed(1)
    m = getattr(tvm, name)(weights=None).to(DEV)
    x = torch.rand(batch, 3, 224, 224, device=DEV)
    if prec == "fp16":
        m = m.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    return m, x


# ---- steps ----

def table_steps(a, w):
    w.writerow(["model", "precision", "batch", "images_per_s", "step_ms", "gpu_busy_ms"])
    torch.backends.cudnn.benchmark = True
    for name in a.models:
        for prec in a.precisions:
            set_prec(prec)
            m, x = build(name, prec, a.batch)
            y = torch.randint(0, 1000, (a.batch,), device=DEV)
            opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
            loss_fn = nn.CrossEntropyLoss()
            scaler = torch.amp.GradScaler(DEV) if prec == "fp16" else None

            def step():
                opt.zero_grad(set_to_none=False)
                with autocast(prec):
                    loss = loss_fn(m(x), y)
                if scaler:
                    scaler.scale(loss).backward()
                    scaler.step(opt)
                    scaler.update()
                else:
                    loss.backward()
                    opt.step()

            ms = sorted(window_ms(step, a.steps, warmup=5)
                        for _ in range(3))[1]
            busy = ""
            try:
                from torch.profiler import profile, ProfilerActivity
                with profile(activities=[ProfilerActivity.CUDA]) as prof:
                    for _ in range(3):
                        step()
                    torch.cuda.synchronize()
                total_us = sum(e.device_time_total for e in prof.key_averages()
                               if e.device_type == torch.autograd.DeviceType.CUDA)
                busy = "%.3f" % (total_us / 3 / 1000)
            except Exception as e:  # the profiler is a diagnostic: never fatal
                sys.stderr.write("profiler: %s\n" % e)
            w.writerow([name, prec, a.batch, "%.1f" % (a.batch / ms * 1000),
                        "%.3f" % ms, busy])
            print("steps %-10s %-5s batch %d: %8.1f img/s, %.2f ms/step, GPU busy %s ms"
                  % (name, prec, a.batch, a.batch / ms * 1000, ms, busy or "?"), flush=True)
            del m, x, opt
            torch.cuda.empty_cache()


# ---- jitter ----

def table_jitter(a, w):
    """Each step of a long run timed on its own (CUDA events): the spread of step times on a
    dedicated GPU, for --compute-jitter."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from syncsim_torch import build as syncsim_model
    w.writerow(["model", "precision", "batch", "steps", "mean_ms", "cv", "p50_ms", "p99_ms",
                "max_ms"])
    cases = [("resnet50", "fp32", a.batch), ("resnet50", "tf32", a.batch), ("mlp", "fp32", 64),
             ("cnn", "fp32", 64)]
    for name, prec, batch in cases:
        set_prec(prec)
        torch.backends.cudnn.benchmark = True
        if name in ("mlp", "cnn"):
            torch.manual_seed(1)
            m = syncsim_model(name).to(DEV)
            x = torch.rand(batch, 1, 28, 28, device=DEV)
            y = torch.randint(0, 10, (batch,), device=DEV)
        else:
            m, x = build(name, prec, batch)
            y = torch.randint(0, 1000, (batch,), device=DEV)
        opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
        loss_fn = nn.CrossEntropyLoss()

        def step():
            opt.zero_grad(set_to_none=False)
            loss_fn(m(x), y).backward()
            opt.step()
        for _ in range(10):
            step()
        n = a.jitter_steps
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(n + 1)]
        torch.cuda.synchronize()
        ev[0].record()
        for i in range(n):
            step()
            ev[i + 1].record()
        ev[n].synchronize()
        t = sorted(ev[i].elapsed_time(ev[i + 1]) for i in range(n))
        mean = sum(t) / n
        cv = (sum((v - mean) ** 2 for v in t) / (n - 1)) ** 0.5 / mean
        w.writerow([name, prec, batch, n, "%.4f" % mean, "%.5f" % cv, "%.4f" % t[n // 2],
                    "%.4f" % t[int(0.99 * (n - 1))], "%.4f" % t[-1]])
        print("jitter %-9s %-5s batch %4d: %d steps, mean %.3f ms, CV %.4f, p50 %.3f, p99 %.3f, "
              "max %.3f ms" % (name, prec, batch, n, mean, cv, t[n // 2], t[int(0.99 * (n - 1))],
                               t[-1]), flush=True)
        del m, x, opt
        torch.cuda.empty_cache()


# ---- layers ----

def kind_of(mod):
    for cls, k in ((nn.Conv2d, "conv"), (nn.BatchNorm2d, "bn"), (nn.ReLU, "relu"),
                   (nn.MaxPool2d, "maxpool"), (nn.AdaptiveAvgPool2d, "avgpool"),
                   (nn.Linear, "linear"), (nn.Dropout, "dropout")):
        if isinstance(mod, cls):
            return k
    return None


def record_calls(m, x, prec):
    """One forward pass; returns [(name, kind, module, input shape, output shape)] in call order,
    residual additions included (kind 'add', module None)."""
    calls, hooks, seen = [], [], {}

    def leaf_hook(name, kind):
        def h(mod, inp, out):
            k = seen.get(name, 0)
            seen[name] = k + 1
            calls.append((name if k == 0 else "%s#%d" % (name, k), kind, mod,
                          tuple(inp[0].shape), tuple(out.shape)))
        return h

    def block_hook(name):
        def h(mod, inp, out):  # the residual add happens just before the block's last ReLU
            calls.insert(len(calls) - 1, (name + ".add", "add", None, tuple(out.shape),
                                          tuple(out.shape)))
        return h

    for name, mod in m.named_modules():
        k = kind_of(mod)
        if k:
            hooks.append(mod.register_forward_hook(leaf_hook(name, k)))
        elif type(mod).__name__ in ("Bottleneck", "BasicBlock"):
            hooks.append(mod.register_forward_hook(block_hook(name)))
    with torch.no_grad(), autocast(prec):
        m(x)
    for h in hooks:
        h.remove()
    return calls


PROFILE = {"resnet101": "resnet101-imagenet"}  # torchvision name -> traces/profiles/<name>
GPU_CLASSES = (("H200", "h200"), ("H100", "h100"), ("A100", "a100"), ("V100", "v100"), ("3090", "rtx3090"),
               ("P100", "p100"))


def gpu_class():
    """syncsim's GPU class (sim/compute/gpu_table.c) of this device, or 'unknown'."""
    name = torch.cuda.get_device_name(0)
    return next((c for key, c in GPU_CLASSES if key in name), "unknown")


RESNET_SUFFIX = {"conv1": "conv1", "conv2": "conv2", "conv3": "conv3", "bn1": "bn1+relu",
                 "relu": "bn1+relu", "bn2": "bn2+relu", "relu#1": "bn2+relu",
                 "bn3": "bn3+add+relu", "add": "bn3+add+relu", "relu#2": "bn3+add+relu",
                 "downsample.0": "shortcut.conv", "downsample.1": "shortcut.bn"}


def profile_layer(model, calls):
    """The layer of traces/profiles/<model>.profile each call belongs to ('' where the profile
    has none: dropout), in call order."""
    out = []
    if model.startswith("resnet"):
        stem = {"conv1": "conv1", "bn1": "bn1+relu", "relu": "bn1+relu", "maxpool": "maxpool",
                "avgpool": "avgpool4", "fc": "fc"}
        for lname, *_ in calls:
            if lname in stem:
                out.append(stem[lname])
                continue
            parts = lname.split(".")
            block, rest = ".".join(parts[:2]), ".".join(parts[2:])
            out.append(block + "." + RESNET_SUFFIX[rest] if rest in RESNET_SUFFIX else "")
        return out
    if not (model.startswith("vgg") or model == "alexnet"):
        sys.stderr.write("torch_layers.py: no profile mapping for %s: profile_layer left empty\n"
                         % model)
        return [""] * len(calls)
    # vgg and alexnet: features are conv, relu, ..., maxpool; then avgpool and the classifier
    convs, pool = 0, "maxpool%d"
    fc = {"classifier.0": "fc1", "classifier.1": "relu_fc1", "classifier.3": "fc2",
          "classifier.4": "relu_fc2", "classifier.6": "fc3", "avgpool": "avgpool7"}
    if model == "alexnet":  # its 6x6 average pool of a 6x6 input is not in the profile
        pool = "pool%d"
        fc = {"classifier.1": "fc6", "classifier.2": "relu6", "classifier.4": "fc7",
              "classifier.5": "relu7", "classifier.6": "fc8"}
    for lname, kind, *_ in calls:
        if lname in fc:
            out.append(fc[lname])
        elif kind == "conv":
            convs += 1
            out.append("conv%d" % convs)
        elif kind == "relu" and lname.startswith("features"):
            out.append("relu%d" % convs)
        elif kind == "maxpool":
            out.append(pool % convs)
        else:
            out.append("")
    return out


MARK = "syncsim_layer:"


def kernel_ms_by_mark(prof, reps):
    """{mark name: mean kernel milliseconds a call} of a profile: the kernels whose GPU start
    lies in each marked window (each window synchronizes before it ends, and the one before it
    ended synchronized, so no kernel straddles two); a window with none attributed so takes the
    device time of the kernels its own operators launched."""
    ranges, kernels = [], []
    for e in prof.events():
        mark = e.name.startswith(MARK)
        if str(getattr(e, "device_type", "")).endswith("CUDA"):
            if not mark:  # a window's own span on the GPU's timeline (a user annotation)
                kernels.append((e.time_range.start, e.time_range.end))
        elif mark:
            ranges.append((e.time_range.start, e.time_range.end, e.name,
                           float(getattr(e, "device_time_total", 0.0) or 0.0)))
    kernels.sort()
    ranges.sort()
    out, j = {}, 0
    for start, end, name, linked in ranges:
        while j < len(kernels) and kernels[j][0] < start:
            j += 1
        tot, k = 0.0, j
        while k < len(kernels) and kernels[k][0] < end:
            tot += kernels[k][1] - kernels[k][0]
            k += 1
        out[name] = (tot if tot > 0 else linked) / 1e3 / reps
    return out, sum(t - s for s, t in kernels) / 1e3


def time_call(kind, mod, in_shape, prec, first, a, mark=None):
    """Forward and backward milliseconds of one call (NaN where it has no backward); with mark,
    the windows run under the caller's profiler as MARK + mark + 'f' and 'b', and NaN comes
    back: the times are read from the profile (kernel_ms_by_mark)."""
    fmt = torch.channels_last if prec == "fp16" and len(in_shape) == 4 else torch.contiguous_format
    # activations enter a layer in the dtype the previous one left them in: under autocast
    # fp16 except the network's input
    dtype = torch.float16 if prec == "fp16" and not first else torch.float32
    x = torch.randn(in_shape, device=DEV, dtype=dtype).contiguous(memory_format=fmt)
    x.requires_grad_(not first)
    other = torch.randn_like(x) if kind == "add" else None

    def fwd():
        with autocast(prec):
            if kind == "add":
                return x + other
            if kind == "relu":
                return torch.relu(x)
            return mod(x)

    def timed(fn, tag):
        if mark is None:
            return window_ms(fn, a.reps)
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        with torch.profiler.record_function(MARK + mark + tag):
            for _ in range(a.reps):
                fn()
            torch.cuda.synchronize()
        return float("nan")

    fwd_ms = timed(fwd, "f")
    y = fwd()
    inputs = ([] if first else [x]) + ([p for p in mod.parameters()] if mod is not None else [])
    bwd_ms = float("nan")
    if inputs and y.requires_grad:
        g = torch.randn_like(y)
        bwd_ms = timed(lambda: torch.autograd.grad(y, inputs, g, retain_graph=True), "b")
    return fwd_ms, bwd_ms


def table_layers(a, w):
    w.writerow(["model", "gpu", "precision", "batch", "index", "name", "profile_layer", "kind",
                "in_shape", "out_shape", "params", "fwd_us", "bwd_us"])
    torch.backends.cudnn.benchmark = True
    for name in a.models:
        for prec in a.precisions:
            set_prec(prec)
            m, x = build(name, prec, a.batch)
            m.train()
            calls = record_calls(m, x, prec)
            player = profile_layer(name, calls)
            del x
            t0, tot_f, tot_b = time.time(), 0.0, 0.0
            times = []
            if a.timing == "kernels":
                acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
                with torch.profiler.profile(activities=acts) as prof:
                    for i, (lname, kind, mod, ish, osh) in enumerate(calls):
                        time_call(kind, mod, ish, prec, i == 0, a, mark="%d" % i)
                by_mark, all_ms = kernel_ms_by_mark(prof, a.reps)
                nan = float("nan")
                times = [(by_mark.get(MARK + "%df" % i, nan), by_mark.get(MARK + "%db" % i, nan))
                         for i in range(len(calls))]
                print("layers %-10s %-5s: %d marked windows, kernels of the whole profile %.1f ms"
                      % (name, prec, len(by_mark), all_ms), flush=True)
            for i, (lname, kind, mod, ish, osh) in enumerate(calls):
                f, b = times[i] if times else time_call(kind, mod, ish, prec, i == 0, a)
                tot_f += 0 if f != f else f
                tot_b += 0 if b != b else b
                params = sum(p.numel() for p in mod.parameters()) if mod is not None else 0
                w.writerow([PROFILE.get(name, name), a.gpu, prec, a.batch, i, lname, player[i], kind,
                            "x".join(map(str, ish)),
                            "x".join(map(str, osh)), params, "" if f != f else "%.2f" % (f * 1000),
                            "" if b != b else "%.2f" % (b * 1000)])
            print("layers %-10s %-5s batch %d: %d calls, forward %.2f ms, backward %.2f ms "
                  "(sum of layers alone; %.0f s)" % (name, prec, a.batch, len(calls), tot_f, tot_b,
                                                     time.time() - t0), flush=True)
            del m
            torch.cuda.empty_cache()


# ---- gemm ----

GEMM_SHAPES = [  # M (batch x output pixels), N (output channels), K (input channels x k x k)
    (8192, 8192, 8192), (4096, 4096, 4096), (2048, 2048, 2048), (1024, 1024, 1024),
    (128 * 56 * 56, 64, 64), (128 * 56 * 56, 64, 576), (128 * 56 * 56, 256, 64),
    (128 * 28 * 28, 128, 1152), (128 * 28 * 28, 512, 128), (128 * 14 * 14, 256, 2304),
    (128 * 14 * 14, 1024, 256), (128 * 7 * 7, 512, 4608), (128 * 7 * 7, 2048, 512),
    (128 * 112 * 112, 64, 147), (128 * 224 * 224, 64, 27), (128 * 224 * 224, 64, 576),
    (128 * 14 * 14, 512, 4608), (128, 4096, 25088), (128, 4096, 4096), (128, 1000, 2048)]


def gemm_shapes(a):
    """GEMM_SHAPES, then the convolutions' products (M a multiple of 128 pixels maps) at each of
    --gemm-batches, without repeating a shape."""
    shapes = list(GEMM_SHAPES)
    for b in a.gemm_batches:
        for (M, N, K) in GEMM_SHAPES:
            if M > 128 and M % 128 == 0 and M != N:
                s = (M // 128 * b, N, K)
                if s not in shapes:
                    shapes.append(s)
    return shapes


def table_gemm(a, w):
    w.writerow(["precision", "M", "N", "K", "tflops"])
    for prec in a.precisions:
        set_prec(prec)
        dt = torch.float16 if prec == "fp16" else torch.float32
        for (M, N, K) in gemm_shapes(a):
            A = torch.randn(M, K, device=DEV, dtype=dt)
            B = torch.randn(K, N, device=DEV, dtype=dt)
            ms = window_ms(lambda: torch.mm(A, B), max(3, a.reps // 2))
            tf = 2.0 * M * N * K / (ms * 1e-3) * 1e-12
            w.writerow([prec, M, N, K, "%.2f" % tf])
            print("gemm %-5s %6d x %5d x %5d: %7.1f TFLOP/s" % (prec, M, N, K, tf), flush=True)
            del A, B
    torch.cuda.empty_cache()


# ---- memory ----

def table_memory(a, w):
    w.writerow(["op", "bytes_moved", "us", "GBps"])
    for mib in (0.0625, 0.25, 1, 4, 16, 64, 256, 1024):
        n = int(mib * 1024 * 1024 / 4)
        x = torch.randn(n, device=DEV)
        y = torch.empty_like(x)
        z = torch.randn(n, device=DEV)
        for op, fn, moved in (("copy", lambda: y.copy_(x), 2), ("relu", lambda: torch.relu(x), 2),
                              ("add", lambda: torch.add(x, z), 3)):
            ms = window_ms(fn, max(5, a.reps))
            gbps = moved * n * 4 / (ms * 1e-3) * 1e-9
            w.writerow([op, moved * n * 4, "%.2f" % (ms * 1000), "%.1f" % gbps])
            print("memory %-4s %9.4f MiB: %9.2f us, %7.1f GB/s" % (op, mib, ms * 1000, gbps),
                  flush=True)
        del x, y, z
    tiny = torch.zeros(1, device=DEV)
    ms = window_ms(lambda: tiny.add_(1), 2000)
    w.writerow(["launch_back_to_back", 4, "%.3f" % (ms * 1000), ""])
    print("memory launch: a 1-element kernel back to back: %.2f us each" % (ms * 1000),
          flush=True)
    torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", default="resnet50,resnet101,vgg16")
    ap.add_argument("--precisions", default="fp32,tf32,fp16")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--jitter-steps", type=int, default=300)
    ap.add_argument("--gpu", default="", help="syncsim GPU class for layers.csv (default: from "
                    "the device's name)")
    ap.add_argument("--tables", default="memory,gemm,layers,steps,jitter")
    ap.add_argument("--timing", choices=("events", "kernels"), default="events",
                    help="layers table: CUDA events around each window, or its kernels' time")
    ap.add_argument("--gemm-batches", default="",
                    help="gemm table: the convolutions' products also at these batches")
    a = ap.parse_args()
    try:
        a.gemm_batches = [int(b) for b in a.gemm_batches.split(",") if b]
    except ValueError:
        raise SystemExit("torch_layers.py: --gemm-batches: a comma-separated list of positive "
                         "integers, got '%s'" % a.gemm_batches)
    if any(b < 1 for b in a.gemm_batches):
        raise SystemExit("torch_layers.py: --gemm-batches: batches must be >= 1")
    a.models = a.models.split(",")
    a.precisions = a.precisions.split(",")
    if not torch.cuda.is_available():
        raise SystemExit("torch_layers.py: no CUDA device visible to PyTorch")
    os.makedirs(a.out, exist_ok=True)
    a.gpu = a.gpu or gpu_class()
    print("torch %s, %s" % (torch.__version__, torch.cuda.get_device_name(0)), flush=True)
    tables = {"steps": table_steps, "layers": table_layers, "gemm": table_gemm,
              "memory": table_memory, "jitter": table_jitter}
    for t in a.tables.split(","):
        if t not in tables:
            raise SystemExit("torch_layers.py: unknown table '%s' (valid: %s)"
                             % (t, ", ".join(tables)))
        t0 = time.time()
        path = os.path.join(a.out, t + ".csv")
        with open(path + ".tmp", "w", newline="") as f:
            tables[t](a, csv.writer(f))
        os.replace(path + ".tmp", path)
        print("(%s: %.0f s)" % (t, time.time() - t0), flush=True)


if __name__ == "__main__":
    main()
