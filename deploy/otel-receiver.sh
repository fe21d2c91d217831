#!/usr/bin/env bash
# The OTLP receiver that the trace tests send to and read back (issue 33): Arize Phoenix
# (`phoenix serve`), installed from PyPI into a venv of its own, build/otel-receiver-venv,
# so its many dependencies never meet the project's. uv installs the pinned set
# (deploy/otel-receiver.txt) in seconds, where pip's resolver took minutes. Done once;
# again only when the pinned set changes. Usage: deploy/otel-receiver.sh [python]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${1:-python3}
VENV=build/otel-receiver-venv
PINS=deploy/otel-receiver.txt
STAMP=$VENV/.installed
if [ -x "$VENV/bin/phoenix" ] && cmp -s "$PINS" "$STAMP"; then
  exit 0
fi
echo "installing the OTLP receiver (Phoenix) into $VENV"
"$PY" -m venv --clear "$VENV"
"$VENV/bin/python" -m pip install --quiet uv==0.13.9
"$VENV/bin/uv" pip install --quiet --system-certs -p "$VENV/bin/python" -r "$PINS"
cp "$PINS" "$STAMP"
