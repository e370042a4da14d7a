#!/usr/bin/env bash
# The checks that need a GPU, as one short script for a borrowed CUDA machine that cannot reach a model
# hub or a package index (see docs/gpu-and-hub-models.md). Nothing else in the project depends on it.
#
#   benchmarks/gpu-check.sh LIKE_DIR OUT_DIR
#
# LIKE_DIR: a qwen2 model folder's config.json + tokenizer files (weights not needed), e.g. a copy of
# ~/.cache/semif/hf-v2/<qwen2.5-0.5b sha>/ without model.safetensors. Python packages the machine lacks
# (transformers 5.24, orjson, jsonschema, gguf…) are installed beforehand from carried wheels.
#
# 1. tests/backends/test_cuda.py: every mode and kernel on CUDA, fp32 vs CPU and bf16 vs bf16 direct;
# 2. a randomly initialised model of the qwen2.5-0.5b architecture (same tokenizer, config, shapes):
#    `semif bench shape --size full` and `semif versus` on CUDA (bf16), whose timings are valid for the
#    architecture while its decisions are meaningless (random weights; the reports say so by their path).
set -uo pipefail
LIKE=${1:?LIKE_DIR}
OUT=${2:?OUT_DIR}
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
SEMIF=(python3 -m scorer.cli)
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/gpu.txt"
python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)" \
  | tee -a "$OUT/gpu.txt"

SEMIF_LIKE_DIR=$LIKE timeout 240 python3 -m pytest -q -p no:cacheprovider tests/backends/test_cuda.py 2>&1 \
  | tee "$OUT/pytest-cuda.log" | tail -25

MODEL=/tmp/qwen2.5-0.5b-architecture-RANDOM-WEIGHTS
[[ -d $MODEL ]] || python3 benchmarks/random_model.py --like "$LIKE" --out "$MODEL" 2>&1 | tail -1
timeout 300 "${SEMIF[@]}" bench shape --size full --model "$MODEL" --device cuda --exact-source probe \
  --output "$OUT/shape-full-random-qwen2.5-0.5b-arch-torch-cuda-bf16.json" 2>"$OUT/bench.err" | tail -12
tail -c 1500 "$OUT/bench.err" | tr '\r' '\n' | grep -v 'dec/s' | tail -5
timeout 180 "${SEMIF[@]}" versus --model "$MODEL" --device cuda \
  --output "$OUT/versus-random-qwen2.5-0.5b-arch-torch-cuda-bf16.json" 2>&1 | tr '\r' '\n' | grep -v 'it/s' | tail -15
ls -la "$OUT"
