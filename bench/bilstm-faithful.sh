#!/usr/bin/env bash
# Faithfulness of `rumedbench baseline bilstm` (issue #61): trains ours and PyTorch running upstream's recipe
# (bench/bilstm_reference.py) on one task over seeds, and prints each side's test score, epochs and minutes side by
# side, scored by the same `rumedbench eval`.
#
#   bash bench/bilstm-faithful.sh [TASK] [SEEDS]        # defaults: RuMedDaNet "0 1 2"
#
# TASK: RuMedTop3, RuMedSymptomRec, RuMedDaNet or RuMedNER (the tagger, on both sides). The whole matrix, and its
# report (node bench/bilstm-faithful-report.js), are in docs/benchmarks.md ("Faithfulness").
#
# Environment: RUMEDBENCH_DATA (the data folder), BENCH_TORCH_PYTHON (a python with torch; else
# /tmp/torch-venv/bin/python, else python3), FAITHFUL_EPOCHS (an epoch cap for both sides; default upstream's 50
# with its early stopping), FAITHFUL_OUT (default .bench-out/bilstm-faithful), FAITHFUL_SIDES ("ours torch").
# Both sides of a seed run at once (2 threads each): the scores, not the times, are what this compares; the times
# are printed for orientation only. Ours runs from a copy of dist/ taken at the start, so a rebuild meanwhile
# changes nothing. Each side's log is kept beside its predictions; a side still running or failed shows as such.
set -u
root="$(cd "$(dirname "$0")/.." && pwd)"
task="${1:-RuMedDaNet}"
seeds="${2:-0 1 2}"
data="${RUMEDBENCH_DATA:?set RUMEDBENCH_DATA to the data folder}"
out="${FAITHFUL_OUT:-$root/.bench-out/bilstm-faithful}"
sides="${FAITHFUL_SIDES:-ours torch}"
epochs=()
[ -n "${FAITHFUL_EPOCHS:-}" ] && epochs=(--epochs "$FAITHFUL_EPOCHS")
py=""
for p in "${BENCH_TORCH_PYTHON:-}" /tmp/torch-venv/bin/python python3; do
  if [ -n "$p" ] && "$p" -c 'import torch' 2>/dev/null; then py="$p"; break; fi
done
[ "${FAITHFUL_REPORT:-}" = 1 ] || mkdir -p "$out"
# The copy keeps the package's layout (dist/ reads ../tasks/ and package.json). Its imports find the repository's
# node_modules through a link inside it: with FAITHFUL_OUT outside the repository no node_modules lies above the
# copy, and ES modules ignore NODE_PATH.
snap="$out/package"
if [ "${FAITHFUL_REPORT:-}" != 1 ]; then
  rm -rf "$snap" && mkdir -p "$snap" && cp -r "$root/dist" "$root/tasks" "$root/package.json" "$snap/" &&
    ln -s "$root/node_modules" "$snap/node_modules"
elif [ ! -f "$snap/dist/bin/rumedbench.js" ]; then
  echo "FAITHFUL_REPORT=1: no copy of dist/ in $snap (nothing was trained into $out)" >&2
  exit 2
fi
cli=(node "$snap/dist/bin/rumedbench.js")

ours() { # seed
  local d="$out/ours-$1"
  rm -rf "$d"
  "${cli[@]}" baseline bilstm --tasks "$task" --seed "$1" --threads 2 --bootstrap 0 --out "$d" "${epochs[@]}" \
    >"$out/ours-$1.log" 2>&1
}
torch() { # seed
  local d="$out/torch-$1"
  rm -rf "$d" && mkdir -p "$d"
  "$py" "$root/bench/bilstm_reference.py" train "$data" "$task" --seed "$1" --threads 2 \
    --predict "$d/$task.jsonl" "${epochs[@]}" >"$out/torch-$1.log" 2>&1
}

for s in $seeds; do
  [ "${FAITHFUL_REPORT:-}" = 1 ] && break
  pids=()
  for side in $sides; do
    if [ "$side" = torch ] && [ -z "$py" ]; then echo "seed $s: PyTorch side skipped: no python with torch"; continue; fi
    ( t0=$(date +%s); "$side" "$s"; echo "$? $(( $(date +%s) - t0 ))" >"$out/$side-$s.done" ) &
    pids+=($!)
  done
  wait "${pids[@]}"
done

# One row per side and seed: the score `rumedbench eval` gives the test predictions, the epochs run, the minutes.
echo "$task, test split, scored by rumedbench eval:"
echo "| side | seed | epochs | minutes | test score |"
echo "|---|---|---|---|---|"
for side in $sides; do
  for s in $seeds; do
    if [ "$side" = ours ]; then preds="$out/ours-$s/predictions"; else preds="$out/torch-$s"; fi
    rc=none secs=0
    [ -f "$out/$side-$s.done" ] && read -r rc secs <"$out/$side-$s.done"
    if [ "$side" = ours ]; then
      n=$(grep -c ": epoch [0-9]*/" "$out/ours-$s.log" 2>/dev/null)
    else
      n=$(grep -c '"epoch"' "$out/torch-$s.log" 2>/dev/null)
    fi
    score="failed (exit $rc; see $out/$side-$s.log)"
    if [ "$rc" = none ]; then
      if [ -f "$out/$side-$s.log" ]; then score="running (no result yet)"; else score="not started"; fi
    elif [ "$rc" = 0 ]; then
      score=$("${cli[@]}" eval "$preds" --bootstrap 0 --json 2>/dev/null |
        node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const t=JSON.parse(s).tasks;const r=t[process.argv[1]];console.log(r?r.score.toFixed(2):"unscored")})' "$task")
    fi
    echo "| $side | $s | ${n:-0} | $(( secs / 60 )) | $score |"
  done
done
