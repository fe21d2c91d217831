#!/usr/bin/env bash
# deploy/wheelhouse.sh [DIR]: every wheel the images install, downloaded on the host
# (default DIR: build/wheelhouse; DIR/embedder for the embedder's image, DIR/common for
# the others), so that an image build needs no network at all: the
# tests' images install from it with `pip install --no-index`. PyTorch is its CPU build
# 2.13.0 (`pip download torch==2.13.0 --no-deps`: on this project's machines the host's
# pip has that file locally), and a constraint keeps the resolver from any other.
#
# Needs the Python the images run (3.11; PYTHON, default .venv/bin/python) on the same
# platform (Linux x86_64). Skipped when DIR was made from the same dependency lists.
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${1:-build/wheelhouse}
PY=${PYTHON:-.venv/bin/python}
TORCH_VERSION=${TORCH_VERSION:-2.13.0}
PACKAGES=(libs/events libs/bus libs/analysis services/orchestrator services/llm-worker
  services/memory services/embedder services/ui services/assessor cli)

say() { printf 'wheelhouse: %s\n' "$*" >&2; }

version=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
[ "$version" = 3.11 ] ||
  { say "$PY is Python $version; the images run 3.11: set PYTHON to a Python 3.11"; exit 1; }

# What the wheelhouse depends on: the packages' dependency lists, the pins the tests
# passed with (constraints.txt, the versions `make install` puts into .venv), this
# script, torch.
key=$(cat "$0" constraints.txt "${PACKAGES[@]/%//pyproject.toml}" | sha256sum | cut -c1-16)-torch$TORCH_VERSION
if [ -f "$OUT/.key" ] && [ "$(cat "$OUT/.key")" = "$key" ]; then
  say "$OUT is up to date ($key)"
  exit 0
fi

tmp="$OUT.tmp"
rm -rf "$tmp"
mkdir -p "$tmp/common" "$tmp/embedder"
constraint="$tmp/.torch-constraint.txt"
echo "torch==$TORCH_VERSION" >"$constraint"
download() { # download DIR REQUIREMENT...: at the versions the tests passed with
  local dir=$1
  shift
  "$PY" -m pip download --quiet --disable-pip-version-check --dest "$dir" \
    --constraint constraints.txt "$@" \
    2> >(grep -v 'is ignored: it is neither' >&2)
}
say "downloading wheels into $OUT (the pip cache makes a second time fast)"
# Two sets, so that only the embedder's image build copies PyTorch and the model in.
# hatchling: the packages' build backend, for building them inside the image.
# async-timeout: redis-py needs it below Python 3.11.3 (Debian bookworm's 3.11.2), a
# marker the host's newer 3.11 does not meet, so pip would not fetch it.
download "$tmp/common" --only-binary=:all: hatchling async-timeout \
  ./libs/events ./libs/bus ./libs/analysis ./services/orchestrator ./services/llm-worker \
  ./services/memory ./services/ui ./services/assessor ./cli
download "$tmp/embedder" --no-deps "torch==$TORCH_VERSION"
download "$tmp/embedder" --only-binary=:all: --constraint "$constraint" hatchling async-timeout \
  ./libs/events ./libs/bus ./services/embedder
rm -f "$constraint"
if ! ls "$tmp"/embedder/torch-"$TORCH_VERSION"+cpu-*.whl >/dev/null 2>&1; then
  say "pip found no CPU build of torch $TORCH_VERSION (only: $(ls "$tmp/embedder" | grep '^torch-' || echo none))"
  exit 1
fi
if ls "$tmp"/common/torch-*.whl >/dev/null 2>&1; then
  say "a package other than the embedder asks for torch: $(ls "$tmp/common" | grep '^torch-')"
  exit 1
fi
echo "$key" >"$tmp/.key"
rm -rf "$OUT"
mv "$tmp" "$OUT"
say "wheels in $OUT: common $(ls "$OUT/common" | wc -l) ($(du -sh "$OUT/common" | cut -f1)), embedder $(ls "$OUT/embedder" | wc -l) ($(du -sh "$OUT/embedder" | cut -f1))"
