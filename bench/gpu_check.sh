#!/usr/bin/env bash
# Checks and times syncsim's CUDA path on a machine with an NVIDIA GPU, in one go:
#   1. the GPU (nvidia-smi);
#   2. test_cuda: every CUDA kernel and training step against the CPU reference;
#   3. `syncsim bench kernels --device cuda` at batch 64 and 256;
#   4. emulated training on the GPU against the CPU (same seed: accuracies, determinism of two
#      GPU runs) and the wall time of emulations of 16 and 64 cnn replicas;
#   5. bench/torch_gpu.py (PyTorch on the same GPU), when python3 has PyTorch.
# Usage: bench/gpu_check.sh [BUILD_DIR [OUT_DIR]]   (defaults: build, gpu-check)
# BUILD_DIR must be a CUDA build (cmake finds nvcc and cuBLAS: "CUDA backend ON").
# Every step has a time limit; a failing step is reported and the next one runs.
set -u
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)" || exit 2
out="${2:-gpu-check}"
mkdir -p "$out" && out="$(cd "$out" && pwd)" || exit 2
bin="$build/syncsim"
summary="$out/gpu_check.txt"
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }

step() { # step NAME LIMIT_S COMMAND...: runs COMMAND with its log in OUT/NAME.log
  local name=$1 limit=$2 t0 rc
  shift 2
  t0=$(date +%s.%N)
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  rc=$?
  say "$(printf '%-28s rc=%-3s %7.1f s' "$name" "$rc" "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')")"
  return $rc
}

say "== gpu"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader |
  tee -a "$summary"

say "== tests"
step test_cuda 300 "$build/tests/test_cuda"
grep -E "Run Summary|suites|tests|asserts|FAIL|SKIP" "$out/test_cuda.log" | tee -a "$summary"

say "== bench kernels"
for b in 64 256; do
  step "bench_kernels_b$b" 120 "$bin" bench kernels --device cuda --batch "$b"
  tee -a "$summary" <"$out/bench_kernels_b$b.log"
done

say "== emulation: cuda vs cpu (4 workers, 0.2 epoch, seed 1)"
for model in mlp cnn; do
  for dev in cuda cpu; do
    step "train_${model}_$dev" 300 "$bin" train --device "$dev" --model "$model" --workers 4 \
      --epochs 0.2 --seed 1 --out "$out/train_${model}_$dev"
  done
  step "train_${model}_cuda_again" 300 "$bin" train --device cuda --model "$model" --workers 4 \
    --epochs 0.2 --seed 1 --out "$out/train_${model}_cuda_again"
  for run in cuda cpu cuda_again; do
    say "$model $run: $(grep -oE '"(test_accuracy|sim_time_s)":[[:space:]]*[0-9.e-]+' \
      "$out/train_${model}_$run/summary.json" 2>/dev/null | tr -d '\t' | tr '\n' ' ')"
  done
  if cmp -s "$out/train_${model}_cuda/metrics.csv" "$out/train_${model}_cuda_again/metrics.csv"; then
    say "$model: two cuda runs, metrics.csv identical"
  else
    say "$model: two cuda runs DIFFER"
  fi
done

say "== emulation wall time (cnn, batch 32 per worker, bsp and selsync)"
for n in 16 64; do
  for policy in bsp selsync; do
    step "emu_cnn_${n}_${policy}_cuda" 240 "$bin" train --device cuda --model cnn --batch 32 \
      --workers "$n" --policy "$policy" --epochs 1 --eval-every 1000000 --seed 1 \
      --out "$out/emu_${n}_$policy"
  done
done
step emu_cnn_16_bsp_cpu 240 "$bin" train --device cpu --model cnn --batch 32 --workers 16 \
  --policy bsp --epochs 0.1 --eval-every 1000000 --seed 1 --out "$out/emu_16_bsp_cpu"

if python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
  say "== pytorch on the same GPU"
  step torch_gpu 400 env PYTHONUNBUFFERED=1 python3 "$root/bench/torch_gpu.py" --csv "$out/torch_gpu.csv"
  grep -v "^torch " "$out/torch_gpu.log" | tee -a "$summary"
else
  say "== pytorch with CUDA not available: torch_gpu.py skipped"
fi
