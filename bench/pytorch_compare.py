#!/usr/bin/env python3
"""Training throughput of syncsim's models in PyTorch eager mode, for comparison with
`syncsim bench kernels --model M` (its "-- 1 BLAS thread" table).

The models are syncsim's --model forms (mlp, cnn, cnn:lenet, resnet:20, vgg:11, ...) as
bench/syncsim_torch.py builds them on Fashion-MNIST's shape (1x28x28, 10 classes).
One training step is forward, softmax cross-entropy, backward and an SGD update with momentum 0.9
and weight decay 5e-4 on one fixed random batch, as kernels/bench.c does. Timing: 2 warm-up
steps, then 5 windows of at least 0.4 s each; the best window counts (the same rule as
kernels/bench.c, so that both are the least disturbed figure on a shared machine). Each window is
timed in wall time and in the process's CPU time (samples/cpu-s, as `syncsim bench kernels`
prints it): on one thread on a machine loaded by other jobs the CPU-time rate is the one that
preemption does not distort.

It installs nothing. PyTorch for the CPU, in a virtual environment outside the repository:
    python3 -m venv /tmp/torch-venv
    /tmp/torch-venv/bin/pip install torch --index-url https://download.pytorch.org/whl/cpu
    /tmp/torch-venv/bin/python bench/pytorch_compare.py --batch 64 --threads 1
(plain `pip install torch` from PyPI works too; it is larger, with CUDA libraries).

Usage: pytorch_compare.py [--batch B] [--threads T] [--models mlp,cnn,resnet:20] [--min-s S]
Prints one line per model: model, batch, samples/s, samples/cpu-s.
"""
import argparse
import sys
import time

try:
    import torch
    import torch.nn as nn
    import syncsim_torch
except ImportError:
    sys.stderr.write("pytorch_compare.py: PyTorch is not installed (see the header of this file "
                     "or docs/PERFORMANCE.md)\n")
    sys.exit(2)


def make_model(name):
    try:
        return syncsim_torch.build(name)
    except ValueError as e:
        raise SystemExit(f"pytorch_compare.py: {e}")


def samples_per_s(name, batch, min_s, channels_last):
    torch.manual_seed(1)
    model = make_model(name)
    x = torch.rand(batch, 1, 28, 28)
    if channels_last and name.partition(":")[0] in ("cnn", "resnet", "vgg"):
        model = model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    y = torch.randint(0, 10, (batch,))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=False)
        loss_fn(model(x), y).backward()
        opt.step()

    for _ in range(2):
        step()
    best, best_cpu = 0.0, 0.0
    for _ in range(5):
        steps, t0, c0 = 0, time.perf_counter(), time.process_time()
        while True:
            step()
            steps += 1
            dt = time.perf_counter() - t0
            if dt >= min_s / 5 and steps >= 2:
                break
        dc = time.process_time() - c0
        best = max(best, steps / dt)
        if dc > 0:
            best_cpu = max(best_cpu, steps / dc)
    return best * batch, best_cpu * batch


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--models", default="mlp,cnn")
    ap.add_argument("--min-s", type=float, default=2.0, help="seconds of timing per model")
    ap.add_argument("--channels-last", action="store_true",
                    help="cnn in NHWC (channels_last) like syncsim; default: PyTorch's NCHW")
    a = ap.parse_args()
    if a.batch < 1 or a.threads < 1 or a.min_s <= 0:
        raise SystemExit("pytorch_compare.py: --batch and --threads must be >= 1, --min-s > 0")
    torch.set_num_threads(a.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s)")
    print(f"{'model':<8} {'batch':>6} {'samples/s':>12} {'samples/cpu-s':>14}")
    for name in a.models.split(","):
        rate, cpu_rate = samples_per_s(name, a.batch, a.min_s, a.channels_last)
        print(f"{name:<8} {a.batch:>6} {rate:>12.0f} {cpu_rate:>14.0f}", flush=True)


if __name__ == "__main__":
    main()
