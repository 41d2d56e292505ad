#!/usr/bin/env python3
"""The GPU kernels of one training step of torchvision's vision models in PyTorch, by kind: where
a step's device time goes, per precision, for comparison with syncsim's per-layer compute model
(`syncsim validate compute`, docs/COMPUTE.md).

Each model trains as bench/torch_gpu.py's vision table does (SGD with momentum 0.9 and weight
decay 5e-4 on fixed random 3x224x224 inputs; fp32 with TF32 off, tf32, fp16 as autocast with a
gradient scaler in channels-last; cuDNN's algorithm search on). After warm-up steps it times
--steps steps with CUDA events, then records --profile-steps more with torch.profiler and sums
every GPU kernel's time by name. A kernel's kind is read from its name: convolution (cuDNN's
and CUTLASS's convolution kernels, and which algorithm: winograd, implicit GEMM, FFT), GEMM,
batch norm, element-wise (ReLU, adds, casts, the scaler's checks), pooling, the optimizer's
fused kernels, reductions, copies, other. cuBLAS's GEMMs (nvjet, xmma_gemm) count as GEMM even
where cuDNN runs a 1x1 convolution through them; the complex products and pointwise sums of an
FFT convolution count as FFT.

Prints, per model and precision, the step's time, the kernels' busy time a step, and each kind's
share; --csv FILE writes every kernel (model, precision, batch, kind, calls a step, us a step,
name). It installs nothing: it needs PyTorch with CUDA and torchvision.

Usage: torch_kernels.py [--models resnet50,vgg16] [--precisions fp32,tf32,fp16] [--batch 128]
                        [--steps 20] [--profile-steps 5] [--top 12] [--csv FILE]
"""
import argparse
import csv
import re
import sys

try:
    import torch
    import torchvision
    from torch.profiler import ProfilerActivity, profile
    from torch_gpu import set_tf32, trainer
    from torch_layers import window_ms
except ImportError as e:
    sys.stderr.write(f"torch_kernels.py: {e}\n")
    sys.exit(2)

# (kind, pattern on the lower-cased kernel name), first match wins
KINDS = (
    ("conv-winograd", r"winograd"),
    ("conv-fft", r"fft|complex|cf32"),
    ("conv-implicit-gemm", r"implicit|conv|dgrad|wgrad|fprop"),
    ("batch-norm", r"batch_?norm|bn_|welford"),
    ("gemm", r"gemm|cublas|cutlass|nvjet|sm\d+_xmma"),
    ("optimizer", r"multi_tensor|foreach|sgd"),
    ("pooling", r"pool"),
    ("reduction", r"reduce|sum_kernel|norm_kernel"),
    ("copy", r"copy|memcpy|memset|cat_|transpose|nchw|nhwc"),
    ("element-wise", r"elementwise|vectorized|threshold|relu|add|mul|fill|unrolled|where|"
                     r"amp_|non_finite|softmax|nll|log_"),
)


def kind_of(name):
    low = name.lower()
    for kind, pat in KINDS:
        if re.search(pat, low):
            return kind
    return "other"


def device_us(evt):
    for attr in ("device_time_total", "cuda_time_total"):
        v = getattr(evt, attr, None)
        if v is not None:
            return float(v)
    return 0.0


def is_gpu_kernel(evt):
    dt = getattr(evt, "device_type", None)
    return dt is not None and str(dt).endswith("CUDA")


def build(name, prec, batch):
    torch.manual_seed(1)
    m = getattr(torchvision.models, name)(num_classes=1000).cuda()
    x = torch.rand(batch, 3, 224, 224, device="cuda")
    y = torch.randint(0, 1000, (batch,), device="cuda")
    if prec == "fp16":
        m = m.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    return trainer(m, x, y, amp=prec == "fp16")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="resnet50,vgg16")
    ap.add_argument("--precisions", default="fp32,tf32,fp16")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--profile-steps", type=int, default=5)
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--csv")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        sys.stderr.write("torch_kernels.py: no CUDA device\n")
        return 2
    torch.backends.cudnn.benchmark = True
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}, cudnn "
          f"{torch.backends.cudnn.version()}, batch {a.batch}", flush=True)
    rows = []
    for name in a.models.split(","):
        for prec in a.precisions.split(","):
            set_tf32(prec == "tf32")
            step = build(name, prec, a.batch)
            for _ in range(5):
                step()
            torch.cuda.synchronize()
            ms = min(window_ms(step, a.steps, warmup=0) for _ in range(3))
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(a.profile_steps):
                    step()
                torch.cuda.synchronize()
            per = {}
            for evt in prof.key_averages():
                us = device_us(evt)
                if us <= 0 or (hasattr(evt, "device_type") and not is_gpu_kernel(evt)):
                    continue
                calls, tot = per.get(evt.key, (0, 0.0))
                per[evt.key] = (calls + evt.count, tot + us)
            busy = sum(t for _, t in per.values()) / a.profile_steps / 1e3
            kinds = {}
            for k, (calls, us) in per.items():
                kd = kind_of(k)
                kinds[kd] = kinds.get(kd, 0.0) + us / a.profile_steps / 1e3
                rows.append((name, prec, a.batch, kd, calls / a.profile_steps,
                             us / a.profile_steps, k))
            print(f"\n{name} {prec} batch {a.batch}: step {ms:.2f} ms "
                  f"({a.batch / ms * 1e3:.0f} images/s), kernels busy {busy:.2f} ms a step",
                  flush=True)
            for kd, t in sorted(kinds.items(), key=lambda kv: -kv[1]):
                print(f"  {kd:20s} {t:8.2f} ms  {100 * t / busy:5.1f} %")
            print("  top kernels (ms a step, calls a step):")
            for k, (calls, us) in sorted(per.items(), key=lambda kv: -kv[1][1])[:a.top]:
                print(f"    {us / a.profile_steps / 1e3:7.3f} {calls / a.profile_steps:6.1f}  "
                      f"[{kind_of(k)}] {k[:110]}")
            del step
            torch.cuda.empty_cache()
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(("model", "precision", "batch", "kind", "calls_per_step", "us_per_step",
                        "kernel"))
            for r in rows:
                w.writerow((r[0], r[1], r[2], r[3], f"{r[4]:.1f}", f"{r[5]:.1f}", r[6]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
