#!/usr/bin/env bash
# Reproduce the shipped toy weights: the chain of scripts/train_toy.py runs they came from.
#
# Each stage warm-starts from the previous one (model weights only; fresh probes and optimiser;
# M5 and M6 resume the previous checkpoint instead) and is resumable (rerun this script after
# an interruption: finished stages are skipped, the running one continues from its ckpt.pt).
# One thread per run but M6 (two); about 6 h on one CPU core in all.
# See harness/assets/toy/TRAINING.md for what each stage is for and what it measured.
#
#   bash scripts/train_toy_chain.sh [WORK_ROOT]   # default /tmp/toy_chain
#   cp WORK_ROOT/s5a/final/model.safetensors harness/assets/toy/   # then re-measure (TRAINING.md)
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

# Session 4: frames, pages and boxes through the same two readers.
HEADS=(--attn-sup 1.0 --sup-at noun --readers 1.0,1.1 --read-penalty 10 --head-drop 0.1)
ALL_KINDS=pope,refcocog,mmmu,vidstg,mlvu,videomme,mmlongbench,mmdocir
# Multi-image kinds drawn twice as often as single-image ones; a 6,000-step schedule.
MIXED=(--kinds "$ALL_KINDS" --image-boost 0.5 --boost-steps 6000 --aux-pos --aux-frame 1.0
  --lr 1e-3 --dense-steps 6000)
# 8. mmdocir alone with the image-index probe on decoder layer 0 (run D2).
stage d2 "${COMMON[@]}" --init-from "$ROOT/fb/ckpt.pt" "${HEADS[@]}" --kinds mmdocir \
  --aux-frame 1.0 --lr 1e-3 --data-seed 12 --dense-steps 3000 --stop-at 1000
# 9. all eight kinds (run M2).
stage m2 "${COMMON[@]}" --init-from "$ROOT/d2/ckpt.pt" "${HEADS[@]}" "${MIXED[@]}" \
  --data-seed 14 --stop-at 1000
# 10. + the evidence probe at the question's noun (run M3, its first 2,000 steps).
stage m3 "${COMMON[@]}" --init-from "$ROOT/m2/ckpt.pt" "${HEADS[@]}" "${MIXED[@]}" \
  --aux-evidence 1.0 --data-seed 15 --stop-at 2000
# 11-12. M3's checkpoint resumed (same optimiser and schedule) with the weak kinds drawn more
# often (run M5), then again with other weights and two threads (run M6: the shipped weights,
# ROOT/m6/final).
resume_from() {  # resume_from SRC DEST: DEST starts from SRC's checkpoint
  mkdir -p "$ROOT/$2"
  [[ -f "$ROOT/$2/ckpt.pt" ]] || cp "$ROOT/$1/ckpt.pt" "$ROOT/$2/ckpt.pt"
}
resume_from m3 m5
stage m5 "${COMMON[@]}" "${HEADS[@]}" "${MIXED[@]}" --aux-evidence 1.0 --data-seed 17 \
  --kind-weights refcocog=2,vidstg=3,mmlongbench=2,videomme=1.5 --stop-at 3250
resume_from m5 m6
stage m6 "${COMMON[@]}" "${HEADS[@]}" "${MIXED[@]}" --aux-evidence 1.0 --data-seed 18 \
  --kind-weights refcocog=2,vidstg=2,mlvu=2.5,mmlongbench=2.5,videomme=1.5 --threads 2

# Session 5: "What object is shown on page k?" supervised at the page number, from M6's export
# with fresh probes fitted first on the frozen model (run S5A: the shipped weights,
# ROOT/s5a/final).
stage s5a "${COMMON[@]}" "${HEADS[@]}" --kinds "$ALL_KINDS" --aux-pos --aux-frame 1.0 \
  --aux-evidence 1.0 --sup-page --init-from "$ROOT/m6/final" --probe-warmup 300 --lr 1e-3 \
  --dense-steps 5000 --data-seed 21 \
  --kind-weights refcocog=2,vidstg=2,mlvu=2.5,mmlongbench=4,videomme=1.5
