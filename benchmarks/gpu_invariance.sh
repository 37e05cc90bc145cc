#!/usr/bin/env bash
# One prepared GPU run (at most 8 minutes, run once): batch invariance of every hf route on the 1b preset in
# bf16, per prompt and bit for bit, the suite with numerics=invariant and numerics=fast, and the user's wall time.
#     bash benchmarks/gpu_invariance.sh OUT                                   # on the device, from the repository root
#     bash benchmarks/gpu_invariance.sh /tmp/inv --preset tiny --limit 5      # the same stages on CPU (a dry run)
# Writes OUT/invariance.md and OUT/invariance.json (copy them to benchmarks/results/ after the run).
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: bash benchmarks/gpu_invariance.sh OUT_DIR [gpu_invariance.py options]}"
shift
mkdir -p "$out"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
timeout -k 3 "${GPU_RUN_LIMIT:-470}" "${PYTHON:-python3}" -u benchmarks/gpu_invariance.py --out "$out" "$@" \
    2>&1 | tee "$out/invariance_log.txt"
