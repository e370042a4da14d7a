#!/usr/bin/env bash
# The peer benchmark in one command: semif against lm-evaluation-harness, vLLM and SGLang on the same prompts.
#   benchmarks/peers/run.sh MODEL_KEY WORKLOAD [--rows N] [--repeats R] [--peers lm-eval,vllm,sglang] [--device cuda]
#   e.g. benchmarks/peers/run.sh qwen2.5-0.5b shape-small
# Installs the project (scripts/install.sh, idempotent), fetches the model if needed, makes each peer's own
# virtualenv under ~/.cache/semif/peers/ (one-off), runs every tool, writes data/results/peers-*.json.
# All options: benchmarks/peers/run.sh --help
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ "${1:-}" != "--help" ] && [ "${1:-}" != "-h" ]; then
  scripts/install.sh
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
exec .venv/bin/python -m benchmarks.peers.main "$@"
