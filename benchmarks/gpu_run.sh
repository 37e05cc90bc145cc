#!/usr/bin/env bash
# One prepared run on a lent GPU (see benchmarks/gpu_suite.py for the stages): it ends by itself within
# GPU_RUN_LIMIT seconds (default 478; the Python side stops at 470 s and its watchdog at 473 s), and writes
#   OUT/gpu_results.json  every stage's figures, as each stage ends
#   OUT/gpu_table.md      the same as tables, the README's GPU rows first
#   OUT/gpu_log.txt       the whole output (also printed)
#     PYTHONUNBUFFERED=1 bash benchmarks/gpu_run.sh "$OUT"            # on the device, from the repository root
#     PYTHON=.venv/bin/python bash benchmarks/gpu_run.sh /tmp/gpu-smoke --smoke   # on CPU, in seconds
set -uo pipefail
export STAICC_GPU_T0="${STAICC_GPU_T0:-$(date +%s.%N)}"
cd "$(dirname "$0")/.."
out="${1:?usage: bash benchmarks/gpu_run.sh OUT_DIR [gpu_suite.py options]}"
shift
mkdir -p "$out"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1 TOKENIZERS_PARALLELISM=true
python="${PYTHON:-python3}"
limit="${GPU_RUN_LIMIT:-478}"
{
  echo "[gpu_run] $(date -u +%FT%TZ) in $(pwd); limit ${limit} s; python: $(command -v "$python")"
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version \
      --format=csv,noheader 2>&1 | sed 's/^/[gpu_run] nvidia-smi: /'
  # the watchdog inside is the first stop; timeout is the last (TERM, then KILL 3 s later)
  timeout -k 3 "$limit" "$python" -u benchmarks/gpu_suite.py --out "$out" "$@"
  status=$?
  elapsed=$(awk -v t0="$STAICC_GPU_T0" -v t1="$(date +%s.%N)" 'BEGIN { printf "%.1f", t1 - t0 }')
  echo "[gpu_run] gpu_suite.py exited with status ${status} after ${elapsed} s (124 would mean the deadline stopped it)"
  ls -l "$out" | sed 's/^/[gpu_run] /'
} 2>&1 | tee "$out/gpu_log.txt"
exit 0
