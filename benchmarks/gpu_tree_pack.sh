#!/usr/bin/env bash
# Tree-packed scoring on one GPU: Normal and the full suite on a random model of Llama-3.2-1B's shape, then the
# suite's tree-packed forward against one row per prompt on Llama-3.1-8B's shape.  Every table is one run of
# benchmarks/bench_kernel.py (rounds interleaved, bf16, bound at 400 TFLOP/s unless PEAK is set).
#   bash benchmarks/gpu_tree_pack.sh [output directory, default benchmarks/results]
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-benchmarks/results}"
mkdir -p "$out"
peak=(--peak-flops "${PEAK:-400e12}")
run() {  # name, then bench_kernel.py arguments
  local name="$1"; shift
  echo "== $name: python benchmarks/bench_kernel.py $*" | tee "$out/$name.txt"
  python benchmarks/bench_kernel.py "$@" "${peak[@]}" 2> "$out/$name.err" | tee -a "$out/$name.txt"
}
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$out/gpu-tree-pack-device.txt"
# Normal, rotten_tomatoes, every prompt: kernel / rows / prefix tree / tree-packed, agreement with float32
run gpu-tree-pack-normal-1b --device cuda --preset llama-3.2-1b --prompts 1024 --rounds 2 --reference-dtype float32
# the suite's 87,360 distinct prompts: one row per prompt / prefix tree / tree-packed, and the suite runner
run gpu-tree-pack-suite-1b --device cuda --preset llama-3.2-1b --workload suite --dataset all --prompts 0 \
    --rounds 1 --reference-dtype float32 --runner-calls 2048 --runner-packing prefix,tree
# 8B shape (about 16 GB of bf16 weights): one dataset's suite prompts, rows against tree-packed
run gpu-tree-pack-suite-8b --device cuda --preset llama-3.1-8b --workload suite --dataset rotten_tomatoes \
    --prompts 0 --rounds 1 --runner-calls 0 --skip "last_token, prefix tree >=2048"
