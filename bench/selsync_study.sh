#!/usr/bin/env bash
# SelSync's thresholds on the models the paper worked with: for each model and worker count, BSP
# and SelSync at delta 0.3, 0.5 and auto:R (syncsim's extension), then one table of Delta's
# percentiles after the warm-up, the LSSR, the final accuracy (perplexity for a language model)
# and the time to BSP's final accuracy (perplexity) as compare and report measure it
# (analysis/tta.h: BSP's final accuracy less 0.5 points, or its final perplexity plus 0.5 %).
#
# Needs only the syncsim binary (and its libraries), bash and awk. Each model is one
# `syncsim sweep` (OUT/<model>/sweep.ini, its runs under OUT/<model>/points/, its sweep.csv),
# whose BSP point of each worker count is the reference of that count's SelSync points.
#
#   bench/selsync_study.sh OUT [--models "resnet:20 gpt:wlm"] [--workers "8 16"] [--epochs E]
#       [--device cpu|cuda|auto] [--deltas "0.3 0.5 auto:0.9"] [--jobs J] [--bandwidth BW]
#       [--eval-every K] [--seed S] [--syncsim PATH] [--dataset NAME] [--set KEY=VALUE]...
#       [--no-report] [--resume]
#
# Each model trains with its default recipe (syncsim train --help), whose decays follow --epochs
# (resnet) or the step count (gpt); --set KEY=VALUE adds any other train option to every run.
# When gnuplot is there, `syncsim report` then draws each model's figures into OUT/<model>/report/
# (accuracy or perplexity against time, Delta against step); --no-report skips it. --resume keeps
# the runs that finished (the sweep's --resume) and reruns the others.
#
# Runtime is the product of models x worker counts x (1 + deltas) runs of --epochs each; --jobs
# runs that many at once (each its own process). A tiny check on 2 cores:
#   bench/selsync_study.sh /tmp/study --models mlp --workers 2 --epochs 0.05 --device cpu
# Prints the table, and writes it to OUT/study.txt and OUT/study.csv.
set -euo pipefail

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'
    exit "${1:-2}"
}

die() {
    echo "selsync_study.sh: $*" >&2
    exit 2
}

[ $# -ge 1 ] || usage 2
case "$1" in -h | --help) usage 0 ;; -*) die "the first argument is the output folder (got '$1')" ;; esac
out=$1
shift
models="resnet:20 gpt:wlm"
workers="8 16"
epochs=1
device=auto
deltas="0.3 0.5 auto:0.9"
jobs=1
bandwidth=""
eval_every=""
seed=1
dataset=""
syncsim="${SYNCSIM:-}"
extra=()
report=1
resume=()
while [ $# -gt 0 ]; do
    case "$1" in -h | --help | --no-report | --resume) ;; *) [ $# -ge 2 ] || die "$1 needs a value" ;; esac
    case "$1" in
    --models) models=$2 ;;
    --workers) workers=$2 ;;
    --epochs) epochs=$2 ;;
    --device) device=$2 ;;
    --deltas) deltas=$2 ;;
    --jobs) jobs=$2 ;;
    --bandwidth) bandwidth=$2 ;;
    --eval-every) eval_every=$2 ;;
    --seed) seed=$2 ;;
    --dataset) dataset=$2 ;;
    --syncsim) syncsim=$2 ;;
    --set) extra+=("$2") ;;
    --no-report | --resume)
        if [ "$1" = --resume ]; then resume=(--resume); else report=0; fi
        shift
        continue
        ;;
    -h | --help) usage 0 ;;
    *) die "unknown option '$1' (--help lists them)" ;;
    esac
    shift 2
done

case "$device" in cpu | cuda | auto) ;; *) die "--device '$device': valid are cpu, cuda, auto" ;; esac
for w in $workers; do
    [[ "$w" =~ ^[0-9]+$ ]] && [ "$w" -ge 2 ] || die "--workers '$w': whole numbers >= 2"
done
[[ "$jobs" =~ ^[0-9]+$ ]] && [ "$jobs" -ge 1 ] || die "--jobs '$jobs': a whole number >= 1"
[ -n "$models" ] || die "--models is empty"
[ -n "$deltas" ] || die "--deltas is empty"
for kv in ${extra[@]+"${extra[@]}"}; do
    [[ "$kv" == *=* ]] || die "--set '$kv': KEY=VALUE (a syncsim train option without its --)"
done

if [ -z "$syncsim" ]; then
    here=$(cd "$(dirname "$0")" && pwd)
    if command -v syncsim > /dev/null 2>&1; then
        syncsim=$(command -v syncsim)
    elif [ -x "$here/../build/syncsim" ]; then
        syncsim="$here/../build/syncsim"
    else
        die "no syncsim binary: put it on PATH, or give --syncsim PATH or SYNCSIM=PATH"
    fi
fi
[ -x "$syncsim" ] || die "--syncsim '$syncsim' is not an executable"

# The data set of a model: text for a language model, Fashion-MNIST for the others.
dataset_of() {
    if [ -n "$dataset" ]; then
        echo "$dataset"
    else
        case "$1" in gpt | gpt:*) echo web-bible ;; *) echo fashion-mnist ;; esac
    fi
}

# A folder name for a model: "resnet:20" gives "resnet-20", "gpt:2,128,4,64" "gpt-2_128_4_64".
slug() {
    echo "$1" | sed -e 's/:/-/g' -e 's/[^A-Za-z0-9._-]/_/g'
}

# A list of words as a sweep axis ("8 16" gives "8,16").
axis() {
    echo "$1" | awk '{ for (i = 1; i <= NF; i++) printf "%s%s", (i > 1 ? "," : ""), $i }'
}

mkdir -p "$out"
status=0
started=$(date +%s)
for model in $models; do
    dir="$out/$(slug "$model")"
    mkdir -p "$dir"
    {
        echo "# written by bench/selsync_study.sh: BSP and SelSync's thresholds on $model"
        echo "[sweep]"
        echo "name = selsync-study-$(slug "$model")"
        echo "out = $dir"
        echo
        echo "[grid]"
        echo "workers = $(axis "$workers")"
        echo "policy = bsp,selsync"
        echo "delta = $(axis "$deltas")"
        echo
        echo "[fixed]"
        echo "model = $model"
        echo "dataset = $(dataset_of "$model")"
        echo "epochs = $epochs"
        echo "device = $device"
        echo "seed = $seed"
        [ -z "$bandwidth" ] || echo "bandwidth = $bandwidth"
        [ -z "$eval_every" ] || echo "eval-every = $eval_every"
        for kv in ${extra[@]+"${extra[@]}"}; do
            echo "${kv%%=*} = ${kv#*=}"
        done
    } > "$dir/sweep.ini"
    echo "== $model: $dir/sweep.ini (workers $workers; bsp, selsync delta $deltas; $epochs epochs)"
    rc=0
    "$syncsim" sweep "$dir/sweep.ini" --jobs "$jobs" ${resume[@]+"${resume[@]}"} || rc=$?
    if [ "$rc" -ne 0 ]; then
        echo "selsync_study.sh: the sweep of $model ended with exit $rc (the table shows what finished)" >&2
        status=$rc
        [ "$rc" -ne 130 ] || break
    fi
done

# ---- figures: syncsim report per model, when gnuplot is there ----
if [ "$report" = 1 ] && command -v gnuplot > /dev/null 2>&1; then
    for model in $models; do
        dir="$out/$(slug "$model")"
        [ -f "$dir/sweep.csv" ] || continue
        if "$syncsim" report "$dir" --out "$dir/report" > "$dir/report.log" 2>&1; then
            echo "== $model: figures and report.md in $dir/report/"
        else
            echo "selsync_study.sh: syncsim report on $dir failed: see $dir/report.log" >&2
        fi
    done
fi

# ---- the table: sweep.csv joined with each point's summary.json ----
table_csv="$out/study.csv"
tmp="$table_csv.tmp.$$"
# one CSV line into f[1..n] (quoted fields with "" inside; no newline inside a field), for the
# two awk programs below
split_csv='
function split_csv(line, f,    n, i, c, q, cur) {
    n = 0; cur = ""; q = 0
    for (i = 1; i <= length(line); i++) {
        c = substr(line, i, 1)
        if (q) {
            if (c == "\"" && substr(line, i + 1, 1) == "\"") { cur = cur "\""; i++ }
            else if (c == "\"") q = 0
            else cur = cur c
        } else if (c == "\"") q = 1
        else if (c == ",") { f[++n] = cur; cur = "" }
        else cur = cur c
    }
    f[++n] = cur
    return n
}
'
echo "model,workers,policy,delta,delta_chosen,delta_p50,delta_p90,delta_p99,delta_max,lssr,test_accuracy,test_perplexity,sim_time_s,tta_s,speedup_vs_bsp,tta,status" > "$tmp"
for model in $models; do
    dir="$out/$(slug "$model")"
    [ -f "$dir/sweep.csv" ] || continue
    awk -v model="$model" -v points="$dir/points" "$split_csv"'
    # a number of summary.json (cJSON: one "key": value per line); "" when null or absent
    function json(file, key,    line, v) {
        v = ""
        while ((getline line < file) > 0) {
            if (index(line, "\"" key "\":") == 0) continue
            sub(/^[^:]*:[ \t]*/, "", line)
            sub(/,[ \t]*$/, "", line)
            if (line != "null") v = line
            break
        }
        close(file)
        return v
    }
    function q(s) { return s ~ /[",]/ ? "\"" gensub_quote(s) "\"" : s }
    function gensub_quote(s) { gsub(/"/, "\"\"", s); return s }
    NR == 1 { for (i = split_csv($0, h); i > 0; i--) col[h[i]] = i; next }
    {
        split_csv($0, f)
        s = points "/" f[col["point"]] "/summary.json"
        st = f[col["status"]]
        printf "%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", q(model),
               f[col["workers"]], f[col["policy"]], f[col["delta"]], json(s, "delta_chosen"),
               json(s, "delta_p50"), json(s, "delta_p90"), json(s, "delta_p99"),
               json(s, "delta_max"), f[col["lssr"]], f[col["test_accuracy"]],
               json(s, "test_perplexity"), f[col["sim_time_s"]], f[col["tta_s"]],
               f[col["speedup_vs_bsp"]], f[col["tta"]], st
    }' "$dir/sweep.csv" >> "$tmp"
done
mv "$tmp" "$table_csv"

awk -v secs=$(($(date +%s) - started)) "$split_csv"'
function num(x, fmt) { return x == "" ? "-" : sprintf(fmt, x) }
NR == 1 {
    printf "%-16s %4s %-26s %8s %8s %8s %8s %6s %9s %10s %9s %8s %s\n", "model", "N", "policy",
           "D p50", "D p90", "D p99", "D max", "LSSR", "accuracy", "perplexity", "TTA(BSP)",
           "speedup", "status"
    next
}
{
    split_csv($0, f)
    pol = f[3]
    if (pol == "selsync") {
        pol = "selsync " f[4]
        if (f[5] != "" && f[4] ~ /^auto/) pol = pol sprintf(" (%.3g)", f[5])
    }
    tta = f[14] != "" ? sprintf("%.4g s", f[14]) : (f[16] == "" ? "-" : f[16])
    printf "%-16s %4s %-26s %8s %8s %8s %8s %6s %9s %10s %9s %8s %s\n", f[1], f[2], pol,
           num(f[6], "%.4g"), num(f[7], "%.4g"), num(f[8], "%.4g"), num(f[9], "%.4g"),
           num(f[10], "%.3f"), num(f[11], "%.4f"), num(f[12], "%.2f"), tta,
           num(f[15], "%.2fx"), f[17]
}
END {
    print ""
    print "D: SelSync'"'"'s Delta after the warm-up over all workers'"'"' steps (summary.json'"'"'s delta_p50..max);"
    print "auto:R shows the delta it chose. LSSR: local steps / steps. accuracy: test accuracy (a"
    print "language model'"'"'s next-token accuracy); perplexity: a language model'"'"'s exp(test loss)."
    print "TTA(BSP): first simulated time at BSP'"'"'s final accuracy less 0.5 points (a language model:"
    print "at or below BSP'"'"'s final perplexity plus 0.5 %), against the BSP run of the same workers;"
    print "speedup = TTA of BSP / TTA. " secs " s of wall time."
}' "$table_csv" | tee "$out/study.txt"
echo "outputs: $out/{study.txt,study.csv}, and per model $out/<model>/{sweep.ini,sweep.csv,points/}"
[ "$report" = 1 ] && command -v gnuplot > /dev/null 2>&1 ||
    echo "figures: syncsim report $out/<model> (needs gnuplot)"
exit "$status"
