#!/usr/bin/env bash
# GPU check for a session lent a device (see scripts/device_check.py for the stages).
# Usage: scripts/device_check.sh [OUT_DIR]   (default: $OUT). Finishes in under 8 minutes:
# the stages share a 460 s budget and the whole run is killed at 470 s. Nothing is installed.
set -u
cd "$(dirname "$0")/.."
out="${1:-${OUT:-}}"
if [ -z "$out" ]; then
  echo "usage: scripts/device_check.sh OUT_DIR (or set \$OUT)" >&2
  exit 2
fi
mkdir -p "$out"
PY="${PYTHON:-python}"
timeout 470 "$PY" scripts/device_check.py "$out" --budget 460 "${@:2}"
status=$?
echo "device_check: exit $status; report in $out/device_check.json"
exit $status
