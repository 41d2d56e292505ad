#!/usr/bin/env python3
"""Training throughput on one GPU in PyTorch, for comparison with syncsim's CUDA path and with its
compute model (`syncsim validate compute`).

Three tables, each a training step of forward, loss, backward and an SGD update (momentum 0.9,
weight decay 5e-4) on fixed random inputs, timed with CUDA events after warm-up steps:

  single    syncsim's models (--models; bench/syncsim_torch.py builds them as kernels/model.c
            does, on Fashion-MNIST's 1x28x28 shape), one replica, at the given batch sizes, in
            FP32 with TF32 off (as syncsim's cuBLAS calls). Compare with
            `syncsim bench kernels --device cuda --model M --batch B`.
  replicas  N replicas of a model (--replica-models), batch 32 each, stepped one after the other
            as an eager loop does (what an emulator that runs one model at a time costs):
            samples/s over all replicas.
  vision    torchvision's ResNet-50, ResNet-101, VGG-16 (ImageNet, 3x224x224) in fp32 (TF32 off),
            tf32 and fp16 (autocast with a gradient scaler, channels_last): images/s. Compare with
            `syncsim validate compute` (same models, GPU class and precisions).

It installs nothing: it needs PyTorch with CUDA (and torchvision for the vision table).
  ceilings  a large matrix product per precision (TFLOP/s) and a 1 GiB device copy (GB/s).

cuDNN's algorithm search (`torch.backends.cudnn.benchmark`) is on unless --cudnn-benchmark off:
NVIDIA's and TensorFlow's published benchmarks search too. Compare the two modes in separate
processes: PyTorch keeps the algorithms it found for a shape and uses them even after the search
is switched off.

Usage: torch_gpu.py [--tables single,replicas,vision,ceilings] [--batches 64,256]
                    [--models mlp,cnn,...] [--replicas 16,64] [--replica-models cnn,resnet:20] [--vision-models resnet50,resnet101,vgg16]
                    [--vision-batch 128[,256...]] [--steps 20] [--cudnn-benchmark on|off]
Prints one line per measurement; --csv FILE also writes them as CSV.
"""
import argparse
import csv
import sys
import time

try:
    import torch
    import torch.nn as nn
    import syncsim_torch
except ImportError:
    sys.stderr.write("torch_gpu.py: PyTorch is not installed\n")
    sys.exit(2)


def timed_rate(step, steps, warmup=3):
    """Median of 3 windows of `steps` steps, timed with CUDA events; returns steps/s."""
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    rates = []
    for _ in range(3):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(steps):
            step()
        end.record()
        end.synchronize()
        rates.append(steps / (start.elapsed_time(end) * 1e-3))
    return sorted(rates)[1]


def trainer(model, x, y, amp=False):
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
    loss_fn = nn.CrossEntropyLoss()
    scaler = torch.amp.GradScaler("cuda") if amp else None

    def step():
        opt.zero_grad(set_to_none=False)
        if amp:
            with torch.autocast("cuda", dtype=torch.float16):
                loss = loss_fn(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss_fn(model(x), y).backward()
            opt.step()
    return step


def set_tf32(on):
    torch.backends.cuda.matmul.allow_tf32 = on
    torch.backends.cudnn.allow_tf32 = on


def table_single(a, rows):
    set_tf32(False)
    for name in a.models:
        for b in a.batches:
            torch.manual_seed(1)
            m = syncsim_torch.build(name).cuda()
            x = torch.rand(b, 1, 28, 28, device="cuda")
            y = torch.randint(0, 10, (b,), device="cuda")
            rate = timed_rate(trainer(m, x, y), a.steps * 5) * b
            rows.append(("single", name, "fp32", b, 1, rate))


def table_replicas(a, rows):
    set_tf32(False)
    b = 32
    for name in a.replica_models:
        for n in a.replicas:
            torch.manual_seed(1)
            steps = []
            for _ in range(n):
                m = syncsim_torch.build(name).cuda()
                x = torch.rand(b, 1, 28, 28, device="cuda")
                y = torch.randint(0, 10, (b,), device="cuda")
                steps.append(trainer(m, x, y))

            def all_replicas():
                for s in steps:
                    s()
            rate = timed_rate(all_replicas, max(2, a.steps // 2)) * b * n
            rows.append(("replicas", name, "fp32", b, n, rate))
            del steps
            torch.cuda.empty_cache()


def table_vision(a, rows):
    try:
        import torchvision.models as tvm
    except ImportError:
        sys.stderr.write("torch_gpu.py: torchvision missing: vision table skipped\n")
        return
    for name, vb in ((m, int(b)) for m in a.vision_models.split(",")
                     for b in a.vision_batch.split(",")):
        for prec in ("fp32", "tf32", "fp16"):
            set_tf32(prec != "fp32")
            torch.manual_seed(1)
            m = getattr(tvm, name)(weights=None).cuda()
            x = torch.rand(vb, 3, 224, 224, device="cuda")
            y = torch.randint(0, 1000, (vb,), device="cuda")
            if prec == "fp16":
                m = m.to(memory_format=torch.channels_last)
                x = x.contiguous(memory_format=torch.channels_last)
            rate = timed_rate(trainer(m, x, y, amp=prec == "fp16"), a.steps) * vb
            rows.append(("vision", name, prec, vb, 1, rate))
            del m, x, y
            torch.cuda.empty_cache()


def table_ceilings(a, rows):
    """The two ceilings: a large matrix product per precision (TFLOP/s) and a device copy
    (GB/s, bytes read plus written), each the median of 3 windows."""
    n = 8192
    for prec, dtype, tf32 in (("fp32", torch.float32, False), ("tf32", torch.float32, True),
                              ("fp16", torch.float16, False), ("bf16", torch.bfloat16, False)):
        set_tf32(tf32)
        x = torch.randn(n, n, device="cuda", dtype=dtype)
        y = torch.randn(n, n, device="cuda", dtype=dtype)
        rate = timed_rate(lambda: torch.mm(x, y), 5)
        rows.append(("ceiling", "matmul8192", prec, n, 1, rate * 2.0 * n ** 3 * 1e-12))
    src = torch.randn(256 * 1024 * 1024, device="cuda")
    dst = torch.empty_like(src)
    rate = timed_rate(lambda: dst.copy_(src), 10)
    rows.append(("ceiling", "copy1GiB", "fp32", 0, 1, rate * 2.0 * src.numel() * 4 * 1e-9))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tables", default="single,replicas,vision,ceilings")
    ap.add_argument("--batches", default="64,256")
    ap.add_argument("--replicas", default="16,64")
    ap.add_argument("--models", default="mlp,cnn,cnn:lenet,resnet:20,vgg:11",
                    help="syncsim models of the single table (bench/syncsim_torch.py)")
    ap.add_argument("--replica-models", default="cnn,resnet:20",
                    help="syncsim models of the replicas table")
    ap.add_argument("--vision-batch", default="128")
    ap.add_argument("--vision-models", default="resnet50,resnet101,vgg16")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--csv", default="")
    ap.add_argument("--cudnn-benchmark", choices=("on", "off"), default="on")
    a = ap.parse_args()
    torch.backends.cudnn.benchmark = a.cudnn_benchmark == "on"
    a.batches = [int(v) for v in a.batches.split(",")]
    a.replicas = [int(v) for v in a.replicas.split(",")]
    a.models = a.models.split(",")
    a.replica_models = a.replica_models.split(",")
    if not torch.cuda.is_available():
        raise SystemExit("torch_gpu.py: no CUDA device visible to PyTorch")
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}, cudnn.benchmark "
          f"{a.cudnn_benchmark}", flush=True)
    rows = []
    tables = {"single": table_single, "replicas": table_replicas, "vision": table_vision,
              "ceilings": table_ceilings}
    for t in a.tables.split(","):
        if t not in tables:
            raise SystemExit(f"torch_gpu.py: unknown table '{t}' (valid: {', '.join(tables)})")
        start = len(rows)
        t0 = time.time()
        tables[t](a, rows)
        for r in rows[start:]:
            unit = {"copy1GiB": "GB/s", "matmul8192": "TFLOP/s"}.get(r[1], "samples/s")
            print(f"{r[0]:<9} {r[1]:<10} {r[2]:<5} batch {r[3]:>4} replicas {r[4]:>3} "
                  f"{r[5]:>12.1f} {unit}", flush=True)
        print(f"({t}: {time.time() - t0:.0f} s)", flush=True)
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["table", "model", "precision", "batch", "replicas", "rate", "unit"])
            for r in rows:
                w.writerow(list(r) + [{"copy1GiB": "GB/s", "matmul8192": "TFLOP/s"}.get(
                    r[1], "samples/s")])


if __name__ == "__main__":
    main()
