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

Language models (gpt:wlm, gpt:L,D,H,T) train on one fixed batch of random token sequences of a
10,000-word vocabulary (kernels/bench.c's BENCH_LM_VOCAB), each sequence's next tokens as the
targets, the cross-entropy averaged over every token; a sample is one sequence. gpt:wlm is
PyTorch's own examples/word_language_model TransformerModel (nn.TransformerEncoderLayer with its
stock nn.MultiheadAttention, sinusoidal positions, untied decoder) at syncsim's sizes, unless
--reference-lm, which times bench/syncsim_torch.py's copy of it (its attention written out, for
the gradient checks).

Usage: pytorch_compare.py [--batch B] [--threads T] [--models mlp,cnn,resnet:20] [--min-s S]
Prints one line per model: model, batch, samples/s, samples/cpu-s.
"""
import argparse
import math
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


LM_VOCAB = 10000  # kernels/bench.c's BENCH_LM_VOCAB


class StockWordLM(nn.Module):
    """examples/word_language_model's TransformerModel (PyTorch's examples repository,
    word_language_model/model.py) with gpt:wlm's sizes: embedding times sqrt(D) plus the
    sinusoids, dropout, nn.TransformerEncoder of stock post-norm layers under a causal mask, a
    linear decoder."""

    def __init__(self, vocab, d=200, heads=2, nhid=200, layers=2, seq=35, dropout=0.2):
        super().__init__()
        self.d = d
        self.encoder = nn.Embedding(vocab, d)
        layer = nn.TransformerEncoderLayer(d, heads, nhid, dropout, batch_first=True)
        self.transformer = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.decoder = nn.Linear(d, vocab)
        self.drop = nn.Dropout(dropout)
        pos = torch.arange(seq, dtype=torch.float32).unsqueeze(1)
        div = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * (-math.log(10000.0) / d))
        pe = torch.zeros(seq, d)
        pe[:, 0::2] = torch.sin(pos * div)
        pe[:, 1::2] = torch.cos(pos * div)
        self.register_buffer("pe", pe, persistent=False)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(seq),
                             persistent=False)

    def forward(self, tokens):
        t = tokens.shape[1]
        x = self.drop(self.encoder(tokens) * math.sqrt(self.d) + self.pe[:t])
        return self.decoder(self.transformer(x, mask=self.mask[:t, :t], is_causal=True))


def make_model(name, reference_lm):
    try:
        if name == "gpt:wlm" and not reference_lm:
            return StockWordLM(LM_VOCAB)
        return syncsim_torch.build(name, classes=LM_VOCAB if name.startswith("gpt") else 10)
    except ValueError as e:
        raise SystemExit(f"pytorch_compare.py: {e}")


def seq_len(name):
    """Tokens per sequence: gpt:wlm 35, gpt:L,D,H,T its T."""
    if name == "gpt:wlm":
        return 35
    try:
        return int(name.partition(":")[2].split(",")[3])
    except (IndexError, ValueError):
        raise SystemExit(f"pytorch_compare.py: {name}: expected gpt:wlm or gpt:L,D,H,T[,P]")


def samples_per_s(name, batch, min_s, channels_last, reference_lm):
    torch.manual_seed(1)
    model = make_model(name, reference_lm)
    lm = name.startswith("gpt")
    if lm:
        seq = torch.randint(0, LM_VOCAB, (batch, seq_len(name) + 1))
        x, y = seq[:, :-1].contiguous(), seq[:, 1:].reshape(-1)
    else:
        x = torch.rand(batch, 1, 28, 28)
        y = torch.randint(0, 10, (batch,))
    if channels_last and name.partition(":")[0] in ("cnn", "resnet", "vgg"):
        model = model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=False)
        out = model(x)
        loss_fn(out.reshape(-1, out.shape[-1]) if lm else out, y).backward()
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
    ap.add_argument("--reference-lm", action="store_true",
                    help="gpt:wlm as bench/syncsim_torch.py builds it (attention written out) "
                         "instead of PyTorch's stock layers")
    a = ap.parse_args()
    if a.batch < 1 or a.threads < 1 or a.min_s <= 0:
        raise SystemExit("pytorch_compare.py: --batch and --threads must be >= 1, --min-s > 0")
    torch.set_num_threads(a.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s)")
    print(f"{'model':<8} {'batch':>6} {'samples/s':>12} {'samples/cpu-s':>14}")
    for name in a.models.split(","):
        rate, cpu_rate = samples_per_s(name, a.batch, a.min_s, a.channels_last, a.reference_lm)
        print(f"{name:<8} {a.batch:>6} {rate:>12.0f} {cpu_rate:>14.0f}", flush=True)


if __name__ == "__main__":
    main()
