#!/usr/bin/env bash
# Checks and times syncsim's CUDA path on a machine with an NVIDIA GPU, in one go:
#   1. the GPU (nvidia-smi);
#   2. test_cuda: every CUDA kernel and training step against the CPU reference, then again under
#      compute-sanitizer's memcheck where it is installed;
#   3. emulated training on the GPU against the CPU, same seed, for each model of MODELS (test
#      accuracy at every evaluation; two GPU runs compared byte for byte); the CPU runs go in the
#      background, one BLAS thread each, while the GPU runs;
#   4. `syncsim bench kernels --device cuda` for each model at batch 64 and 256 (at 256 with
#      --layers: each layer's time, the convolutions' share of SGEMM);
#   5. the wall time of emulations of 16 and 64 replicas on the GPU; `profile model --measure
#      cuda` of resnet:20, vgg:11 and gpt:wlm (web-bible) against the step `train --compute measured` charges;
#   6. with PyTorch (python3 with CUDA): bench/torch_gpu.py (the same models and replica loops on
#      the same GPU), bench/torch_host.py (the framework's host costs), bench/torch_kernels.py
#      (where a ResNet-50 and a VGG-16 step's kernel time goes), bench/torch_layers.py --timing
#      kernels (their layers run alone, timed by their kernels), and a torchvision
#      ResNet-18 recorded with bench/record_profile.py, imported and replayed on one worker;
#   6b. gpt:wlm under SelSync on 8 streams, twice, compared byte for byte;
#   7. the whole test suite (ctest, half the cores), in the background during steps 2 and 3, whose
#      checks are not timed; the benchmarks from step 4 on wait for it.
# Usage: bench/gpu_check.sh [BUILD_DIR [OUT_DIR]]   (defaults: build, gpu-check)
# Environment: DATA_DIR (Fashion-MNIST files for step 3; default the package's), MODELS (default
# "mlp cnn cnn:lenet resnet:20 vgg:11"), SUITE_S (the suite's time limit, default 600),
# CTEST_ARGS (more ctest arguments, e.g. "-E testbed").
# BUILD_DIR must be a CUDA build (cmake finds nvcc and cuBLAS: "CUDA backend ON").
# Every step has a time limit; a failing step is reported and the next one runs.
set -u
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)" || exit 2
out="${2:-gpu-check}"
mkdir -p "$out" && out="$(cd "$out" && pwd)" || exit 2
bin="$build/syncsim"
data="${DATA_DIR:-/usr/share/datasets/fashion-mnist}"
models="${MODELS:-mlp cnn cnn:lenet resnet:20 vgg:11}"
suite_s="${SUITE_S:-600}"
start=$(date +%s)
summary="$out/gpu_check.txt"
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }
tag() { echo "$1" | tr ':,' '--'; }

step() { # step NAME LIMIT_S COMMAND...: runs COMMAND with its log in OUT/NAME.log
  local name=$1 limit=$2 t0 rc
  shift 2
  t0=$(date +%s.%N)
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  rc=$?
  say "$(printf '%-34s rc=%-3s %7.1f s' "$name" "$rc" "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')")"
  return $rc
}

curve() { # the test accuracy column of a run's metrics.csv, one line
  awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "test_accuracy") c = i; next }
           c && $c != "" { printf "%s ", $c }' "$1/metrics.csv" 2>/dev/null
}

say "== gpu"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader |
  tee -a "$summary"

say "== the whole suite (ctest, background, ${suite_s} s at most)"
jobs=$(($(nproc) / 2 > 1 ? $(nproc) / 2 : 1))
# shellcheck disable=SC2086
(cd "$build" && step ctest "$suite_s" ctest -j "$jobs" --timeout 300 ${CTEST_ARGS:-}) &
suite_pid=$!

# The emulations of step 3: 2 workers of batch 32, a few evaluations (0.2 epoch; vgg 0.1).
train_args() { # MODEL DEVICE RUN_DIR
  local ep=0.2 lr=0
  case $1 in vgg:*) ep=0.1 lr=0.01 ;; resnet:*) lr=0.01 ;; esac
  echo train --model "$1" --device "$2" --workers 2 --batch 32 --epochs "$ep" --eval-every 8 \
    --lr "$lr" --seed 1 --data-dir "$data" --out "$3"
}
say "== emulation on the CPU (background, one process per model)"
cpu_pids=()
for m in $models; do
  t=$(tag "$m")
  # shellcheck disable=SC2046
  (step "train_${t}_cpu" 600 "$bin" $(train_args "$m" cpu "$out/train_${t}_cpu")) &
  cpu_pids+=($!)
done

say "== tests"
step test_cuda 300 "$build/tests/test_cuda"
grep -E "Run Summary|suites|tests|asserts|FAIL|SKIP" "$out/test_cuda.log" | tee -a "$summary"
if command -v compute-sanitizer >/dev/null; then
  step memcheck 300 compute-sanitizer --tool memcheck "$build/tests/test_cuda"
  grep -E "ERROR SUMMARY|asserts" "$out/memcheck.log" | tee -a "$summary"
fi

say "== emulation on the GPU (twice each)"
for m in $models; do
  t=$(tag "$m")
  for run in cuda cuda_again; do
    # shellcheck disable=SC2046
    step "train_${t}_$run" 300 "$bin" $(train_args "$m" cuda "$out/train_${t}_$run")
  done
done
wait "${cpu_pids[@]}"
for m in $models; do
  t=$(tag "$m")
  for run in cpu cuda cuda_again; do
    say "$m $run: accuracy $(curve "$out/train_${t}_$run")"
  done
  if cmp -s "$out/train_${t}_cuda/metrics.csv" "$out/train_${t}_cuda_again/metrics.csv"; then
    say "$m: two cuda runs, metrics.csv identical"
  else
    say "$m: two cuda runs DIFFER"
  fi
done

# A language model on streams: 8 gpt:wlm replicas under SelSync on 8 streams, twice, on a
# WikiText-form text the script writes (a fixed pseudo-random word sequence)
say "== gpt:wlm on 8 streams (twice)"
wiki="$out/wiki"
mkdir -p "$wiki"
for split in train:300000:1 valid:3000:2 test:3000:3; do
  IFS=: read -r name words seed <<<"$split"
  awk -v n="$words" -v s="$seed" 'BEGIN { srand(s); split("the a cat dog sat ran on to mat house and slept", w, " ");
    for (i = 1; i <= n; i++) { printf " %s", w[1 + int(rand() * 12)]; if (i % 12 == 0) printf " \n" } }' \
    >"$wiki/wiki.$name.tokens"
done
for run in a b; do
  step "gpt_streams_$run" 300 "$bin" train --model gpt:wlm --dataset wikitext-2 --data-dir "$wiki" \
    --device cuda --policy selsync --delta 0.3 --workers 8 --threads 8 --epochs 1 --eval-every 20 \
    --progress no --out "$out/gpt_streams_$run"
done
if cmp -s "$out/gpt_streams_a/metrics.csv" "$out/gpt_streams_b/metrics.csv"; then
  say "gpt:wlm: two cuda runs on 8 streams, metrics.csv identical"
else
  say "gpt:wlm: two cuda runs on 8 streams DIFFER"
fi

wait "$suite_pid"
grep -E "tests passed|Failed|\*\*\*|Not Run" "$out/ctest.log" | tee -a "$summary"

say "== bench kernels --device cuda (--layers at batch 256, not for gpt)"
for m in $models; do
  for b in 64 256; do
    layers=
    case $m in gpt:*) ;; *) [ "$b" = 256 ] && layers=--layers ;; esac
    # shellcheck disable=SC2086
    step "bench_kernels_$(tag "$m")_b$b" 120 "$bin" bench kernels --device cuda --model "$m" \
      --batch "$b" $layers
    grep -A1 "^model" "$out/bench_kernels_$(tag "$m")_b$b.log" | tail -1 | tee -a "$summary"
    grep "^convolutions" "$out/bench_kernels_$(tag "$m")_b$b.log" | tee -a "$summary"
  done
done
grep -m1 "^sgemm" "$out"/bench_kernels_mlp_b64.log | tee -a "$summary"

say "== emulation wall time on the GPU (batch 32 per worker, bsp, one epoch of Fashion-MNIST)"
for m in cnn resnet:20; do
  for n in 16 64; do
    step "emu_$(tag "$m")_${n}_cuda" 240 "$bin" train --device cuda --model "$m" --batch 32 \
      --workers "$n" --policy bsp --epochs 1 --eval-every 1000000 --seed 1 \
      --out "$out/emu_$(tag "$m")_$n"
  done
done

say "== profile model --measure cuda against train --compute measured (one worker, batch 128)"
for m in resnet:20 vgg:11 gpt:wlm; do
  step "measure_$(tag "$m")" 120 "$bin" profile model --model "$m" --batch 128 --measure cuda \
    --out "$out/measure_$(tag "$m").profile"
  tail -1 "$out/measure_$(tag "$m").log" | tee -a "$summary"
  step "measured_train_$(tag "$m")" 240 "$bin" train --device cuda --model "$m" --batch 128 \
    --workers 1 --policy bsp --compute measured --epochs 0.064 --eval-every 1000000 \
    --out "$out/measured_train_$(tag "$m")"
  grep -v "^#" "$out/measured_train_$(tag "$m")/steps.trace" 2>/dev/null |
    awk -v m="$m" '$2 == 0 { s += $4; n++ } END { if (n) printf "%s: train --compute measured, mean step %.6f s over %d steps\n", m, s / n, n }' |
    tee -a "$summary"
done

if python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
  say "== pytorch on the same GPU"
  step torch_gpu 300 env PYTHONUNBUFFERED=1 python3 "$root/bench/torch_gpu.py" \
    --tables single,replicas,ceilings --models "$(echo "$models" | tr ' ' ,)" \
    --csv "$out/torch_gpu.csv"
  grep -v "^torch " "$out/torch_gpu.log" | tee -a "$summary"
  step torch_host 120 env PYTHONUNBUFFERED=1 python3 "$root/bench/torch_host.py" \
    --csv "$out/torch_host.csv"
  tee -a "$summary" <"$out/torch_host.log"
  step torch_kernels 300 env PYTHONUNBUFFERED=1 python3 "$root/bench/torch_kernels.py" \
    --csv "$out/torch_kernels.csv"
  grep -E "^(resnet50|vgg16) " "$out/torch_kernels.log" | tee -a "$summary"
  step torch_layers_kernels 300 env PYTHONUNBUFFERED=1 python3 "$root/bench/torch_layers.py" \
    --out "$out/layers-kernels" --models resnet50,vgg16 --precisions fp16,tf32 --tables layers \
    --timing kernels --reps 10
  grep "calls, forward" "$out/torch_layers_kernels.log" | tee -a "$summary"
  say "== a recorded GPU profile (torchvision resnet18, batch 64, fp32), imported and replayed"
  step record_resnet18 180 env PYTHONUNBUFFERED=1 python3 "$root/bench/record_profile.py" \
    --model resnet18 --batch 64 --steps 10 --device cuda --out "$out/resnet18-h"
  step import_resnet18 60 "$bin" profile import "$out/resnet18-h.json" \
    --params "$out/resnet18-h.params.json" --out "$out/resnet18-h.profile"
  step replay_resnet18 60 "$bin" replay --profile "$out/resnet18-h.profile" --workers 1 \
    --steps 20 --out "$out/replay_resnet18"
  tail -5 "$out/import_resnet18.log" | tee -a "$summary"
  grep "simulated time" "$out/replay_resnet18.log" | tee -a "$summary"
else
  say "== pytorch with CUDA not available: torch_gpu.py, torch_host.py, record_profile.py skipped"
fi

say "== total $(($(date +%s) - start)) s"
