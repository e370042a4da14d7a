#!/bin/sh
# Issue 3 benchmark: measure the fast paths' drift on held-out states, then run the shape bench.
#
#   benchmarks/shape.sh [MODEL] [SIZE]        (defaults: qwen2.5-0.5b small)
#   env: SEMIF (the semif command), REPEATS (fast passes per mode, default 3),
#        CAL_ROWS (held-out rows of shape-full.jsonl for the drift report, default 735:777)
#
# 1. `semif drift` scores the held-out rows (default: the last two states of shape-full.jsonl, not
#    part of shape-small) fresh and in serial/shared mode, and writes
#    data/results/drift-MODEL-torch-MODE.json. The --exact passes of the bench take their bound from
#    these reports; with SIZE=full the held-out rows are part of the workload, so the bench measures
#    drift with a probe of the first rows instead (and says so in its report).
# 2. `semif bench shape` writes data/results/shape-SIZE-MODEL-torch.json and prints a table.
# Both hold /tmp/semif-heavy.lock (when flock exists) so timed runs do not overlap other heavy jobs.
set -eu
MODEL=${1:-qwen2.5-0.5b}
SIZE=${2:-small}
SEMIF=${SEMIF:-semif}
REPEATS=${REPEATS:-3}
CAL_ROWS=${CAL_ROWS:-735:777}
LOCK=""
if command -v flock >/dev/null 2>&1; then LOCK="flock /tmp/semif-heavy.lock"; fi
$LOCK $SEMIF drift --model "$MODEL" --input data/workloads/shape-full.jsonl --rows "$CAL_ROWS" \
    --modes serial,shared --force
$LOCK $SEMIF bench shape --size "$SIZE" --model "$MODEL" --repeats "$REPEATS" --force
