#!/usr/bin/env bash
# Reproduce the shipped toy weights: the chain of scripts/train_toy.py runs they came from.
#
# Each stage warm-starts from the previous one (model weights only; fresh probe and optimiser)
# and is resumable (rerun this script after an interruption: finished stages are skipped, the
# running one continues from its ckpt.pt). One thread per run; about 2.5 h on one CPU core in all.
# See harness/assets/toy/TRAINING.md for what each stage is for and what it measured.
#
#   bash scripts/train_toy_chain.sh [WORK_ROOT]   # default /tmp/toy_chain
#   cp WORK_ROOT/fb/final/model.safetensors harness/assets/toy/   # then re-measure (TRAINING.md)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=${1:-/tmp/toy_chain}
PY=${PYTHON:-python}
COMMON=(--aux-factored --aux-smoothing 0.1 --batch 64 --threads 1 --prune-steps 0)
RETRIEVAL=(--attn-sup 1.0 --sup-at noun --kinds pope,refcocog,mmmu --lr 1e-3)

stage() {  # stage NAME ARGS...: skipped when NAME/final exists
  local name=$1
  shift
  if [[ -d "$ROOT/$name/final" ]]; then
    echo "stage $name: done"
    return
  fi
  echo "stage $name: $*"
  "$PY" scripts/train_toy.py --work "$ROOT/$name" --out "$ROOT/$name/final" "$@"
}

# 1. pope alone from scratch (leaves chance after ~40k samples).
stage p "${COMMON[@]}" --kinds pope --lr 2e-3 --dense-steps 3000
# 2. + refcocog and mmmu (run R2; its dense export).
stage r "${COMMON[@]}" --init-from "$ROOT/p/ckpt.pt" --kinds pope,refcocog,mmmu --lr 1e-3 \
  --dense-steps 6000
# 3. retrieval supervised at the question's object noun, then light group-lasso pruning.
stage n --aux-factored --aux-smoothing 0.1 --batch 64 --threads 1 --init-from "$ROOT/r/final" \
  "${RETRIEVAL[@]}" --dense-steps 1000 --prune-steps 1500 --lam 1e-3 --prune-lr 5e-4
# 4. retrieval bottleneck: only heads 1.0 and 1.1 may read the image from the text.
stage v2 "${COMMON[@]}" --init-from "$ROOT/n/ckpt.pt" "${RETRIEVAL[@]}" --readers 1.0,1.1 \
  --read-penalty 1 --data-seed 1 --dense-steps 1500
stage v3 "${COMMON[@]}" --init-from "$ROOT/v2/ckpt.pt" "${RETRIEVAL[@]}" --readers 1.0,1.1 \
  --read-penalty 10 --data-seed 2 --dense-steps 1000
# 5. DropHead on the other heads (redundancy everywhere but retrieval).
stage v5 "${COMMON[@]}" --init-from "$ROOT/v3/ckpt.pt" "${RETRIEVAL[@]}" --readers 1.0,1.1 \
  --read-penalty 10 --head-drop 0.1 --data-seed 4 --dense-steps 1500
# 6. longer with the same losses.
stage f "${COMMON[@]}" --init-from "$ROOT/v5/ckpt.pt" "${RETRIEVAL[@]}" --readers 1.0,1.1 \
  --read-penalty 10 --head-drop 0.1 --data-seed 6 --dense-steps 3000
# 7. longer still (the shipped weights: ROOT/fb/final).
stage fb "${COMMON[@]}" --init-from "$ROOT/f/ckpt.pt" "${RETRIEVAL[@]}" --readers 1.0,1.1 \
  --read-penalty 10 --head-drop 0.1 --data-seed 9 --dense-steps 4000
