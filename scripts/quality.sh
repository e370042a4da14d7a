#!/usr/bin/env bash
# Reproduces the decision-quality results of docs/results.md (issue: labelled workloads, metrics,
# calibration, order robustness, two-path routing): the scored runs under data/results/runs/ and the
# eval / calibrate / order / route reports under data/results/.
#
# Nothing is overwritten: a run whose records are complete is left as it is (`--resume` continues a
# partial one), and a report that exists is kept unless FORCE=1. Every run uses one CPU thread, as the
# committed runs did, so two of them can share the 2-core machine and their times stay comparable.
# Expect several hours on 2 CPU cores (qwen2.5-1.5b takes ~4 s per decision per ordering).
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
SEMIF=.venv/bin/semif
RUNS=data/results/runs
RES=data/results
FORCE_FLAG=()
[[ "${FORCE:-0}" == 1 ]] && FORCE_FLAG=(--force)

# The perturbed sets are built deterministically (byte-identical on every rebuild).
for set in authored boundary; do
  for kind in reverse wrap distract; do
    [[ -f data/eval/perturbed-$kind-$set.jsonl ]] ||
      $SEMIF perturb --input data/eval/$set.jsonl --kind $kind --output data/eval/perturbed-$kind-$set.jsonl
  done
done

score() {  # score NAME INPUT ARGS...: records to $RUNS/NAME.jsonl, resumed if partial
  local name=$1 input=$2; shift 2
  local out=$RUNS/$name.jsonl resume=()
  if [[ -s $out ]]; then
    [[ $(wc -l <"$out") -ge $(grep -c . "$input") ]] && return 0
    resume=(--resume)
  fi
  echo "== score $name" >&2
  $SEMIF score --input "$input" --output "$out" --threads 1 "${resume[@]}" "$@"
}

report() {  # report KIND NAME ARGS...: a JSON report at $RES/KIND-NAME.json unless it exists
  local kind=$1 name=$2; shift 2
  local out=$RES/$kind-$name.json
  [[ -f $out && -z ${FORCE_FLAG[*]:-} ]] && return 0
  $SEMIF "$kind" "$@" --output "$out" "${FORCE_FLAG[@]}"
}

for set in authored boundary; do
  in=data/eval/$set.jsonl rev=data/eval/perturbed-reverse-$set.jsonl
  score q05-torch-$set "$in" --model qwen2.5-0.5b
  score q05-torch-reverse-$set "$rev" --model qwen2.5-0.5b
  score q05-torch-permute2-$set "$in" --model qwen2.5-0.5b --permute 2
  score q05-torch-permute2-reverse-$set "$rev" --model qwen2.5-0.5b --permute 2
  score q05-llamacpp-t1-$set "$in" --model qwen2.5-0.5b --backend llamacpp
  score q15-torch-$set "$in" --model qwen2.5-1.5b
  score q15-torch-reverse-$set "$rev" --model qwen2.5-1.5b
  score q15-torch-permute2-$set "$in" --model qwen2.5-1.5b --permute 2
  score q15-torch-permute2-reverse-$set "$rev" --model qwen2.5-1.5b --permute 2

  for run in q05-torch q05-llamacpp-t1 q15-torch q05-torch-reverse q15-torch-reverse q05-torch-permute2 \
             q05-torch-permute2-reverse q15-torch-permute2 q15-torch-permute2-reverse; do
    report eval "$run-$set" "$RUNS/$run-$set.jsonl" --labels "$in"
  done
  for run in q05-torch q05-llamacpp-t1 q15-torch; do
    report calibrate "$run-$set" "$RUNS/$run-$set.jsonl" --labels "$in"
  done
  for m in q05 q15; do
    report order "$m-torch-$set" --labels "$in" --base "$RUNS/$m-torch-$set.jsonl" \
      --reversed "$RUNS/$m-torch-reverse-$set.jsonl" --permuted "$RUNS/$m-torch-permute2-$set.jsonl" \
      --permuted-reversed "$RUNS/$m-torch-permute2-reverse-$set.jsonl"
  done
  th=0,0.05,0.1,0.2,0.3,0.5,1
  report route "q05-llamacpp-to-q05-torch-$set" --labels "$in" --thresholds $th \
    --fast "$RUNS/q05-llamacpp-t1-$set.jsonl" --reference "$RUNS/q05-torch-$set.jsonl"
  report route "q05-llamacpp-to-q15-torch-$set" --labels "$in" --thresholds $th \
    --fast "$RUNS/q05-llamacpp-t1-$set.jsonl" --reference "$RUNS/q15-torch-$set.jsonl"
  report route "q05-torch-to-q15-torch-$set" --labels "$in" --thresholds $th \
    --fast "$RUNS/q05-torch-$set.jsonl" --reference "$RUNS/q15-torch-$set.jsonl"
done
# Meaning-preserving perturbations (question wrapped in neutral words, irrelevant context appended):
# each run compared with the unperturbed one on the same rows (flips, accuracy deltas).
for kind in wrap distract; do
  score q05-torch-$kind-authored data/eval/perturbed-$kind-authored.jsonl --model qwen2.5-0.5b
  report eval "q05-torch-authored-vs-$kind" "$RUNS/q05-torch-authored.jsonl" --labels data/eval/authored.jsonl \
    --compare "$RUNS/q05-torch-$kind-authored.jsonl"
done

# Calibration that changes decisions (issue 11): every method of `semif calibrate report` (label-free
# priors, stored priors, orderings, labelled offsets out of fold, the per-family bound, class-skewed
# subsamples, routing with calibrated margins) on every labelled set; no model run is needed for them.
calib() {  # calib NAME ARGS...: data/results/calibration-NAME.json unless it exists (reports are create-only)
  local out=$RES/calibration-$1.json; shift
  [[ -f $out ]] && return 0
  echo "== calibration report $out" >&2
  $SEMIF calibrate report "$@" --output "$out"
}
for set in authored boundary; do
  in=data/eval/$set.jsonl
  for m in q05 q15; do
    route=()
    [[ $m == q15 ]] && route=(--route-fast "$RUNS/q05-torch-$set.jsonl")
    calib "$m-torch-$set" --run "$RUNS/$m-torch-$set.jsonl" --labels "$in" --skew "${route[@]}" \
      --permuted "$RUNS/$m-torch-permute2-$set.jsonl" --permuted-reversed "$RUNS/$m-torch-permute2-reverse-$set.jsonl"
  done
done
# The shape workload: 37 states x 21 criteria, labels by construction. A criterion is a family (and a
# signature), a state a group: folds are leave-one-state-out.
shape=data/workloads/shape-full.jsonl
score q15-torch-shared-shape-full $shape --model qwen2.5-1.5b --mode shared
score q05-torch-shared-shape-full $shape --model qwen2.5-0.5b --mode shared
score q15-llamacpp-shared-shape-full $shape --model qwen2.5-1.5b --backend llamacpp --mode shared
for m in q15-torch q05-torch q15-llamacpp; do
  calib $m-shared-shape-full --run $RUNS/$m-shared-shape-full.jsonl --labels $shape \
    --family-field criterion_id --group-field state_id --folds groups --skew
done
calib route-q05-to-q15-torch-shared-shape-full --run $RUNS/q15-torch-shared-shape-full.jsonl --labels $shape \
  --family-field criterion_id --group-field state_id --folds groups --label-free \
  --route-fast $RUNS/q05-torch-shared-shape-full.jsonl
# Calibration files as `semif score --calibration` reads them: a stored label-free prior and a labelled fit.
[[ -f $RES/prior-q15-torch-boundary.json ]] ||
  $SEMIF calibrate prior $RUNS/q15-torch-boundary.jsonl --input data/eval/boundary.jsonl \
    --output $RES/prior-q15-torch-boundary.json
[[ -f $RES/bias-q15-torch-authored.json ]] ||
  $SEMIF calibrate bias $RUNS/q15-torch-authored.jsonl --labels data/eval/authored.jsonl --balanced --temperature \
    --output $RES/bias-q15-torch-authored.json
# The content-free prior (Zhao et al. 2021: the question scored with the states N/A, [MASK], None;
# 3 forward passes of qwen2.5-1.5b) next to the batch prior on the boundary set.
cf=$RES/prior-content-free-q15-torch-boundary.json
[[ -f $cf ]] || $SEMIF calibrate prior $RUNS/q15-torch-boundary.jsonl --input data/eval/boundary.jsonl \
  --estimator content-free --model qwen2.5-1.5b --threads 1 --output $cf
[[ -f $RUNS/q15-torch-content-free-boundary.jsonl ]] || $SEMIF calibrate apply $RUNS/q15-torch-boundary.jsonl \
  --calibration $cf --input data/eval/boundary.jsonl --output $RUNS/q15-torch-content-free-boundary.jsonl
report eval q15-torch-content-free-boundary $RUNS/q15-torch-content-free-boundary.jsonl --labels data/eval/boundary.jsonl
echo "quality reports in $RES/ (runs in $RUNS/)" >&2
