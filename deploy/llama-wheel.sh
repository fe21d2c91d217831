#!/usr/bin/env bash
# deploy/llama-wheel.sh [PYTHON]: the folder holding a portable wheel of llama-cpp-python
# (the embedded model's runtime), built once per machine and kept in the user's cache.
#
# Why not pip's own build: llama.cpp compiles for the build machine's CPU by default
# (GGML_NATIVE): on a VM whose CPU advertises AMX, every generation of that build
# crashed the process (a segmentation fault in llama_decode, measured 2026-11-28; AMX
# the likely cause, the portable build runs there); pip's wheel cache then hands the same build to
# every later install, whatever CMAKE_ARGS says. This wheel is built with
# LLAMA_CMAKE_ARGS (default -DGGML_NATIVE=OFF: AVX2, FMA and F16C, no AMX), and its
# folder is named by the version and the flags, so another choice builds anew.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${1:-.venv/bin/python}
version=$(sed -n 's/^llama_cpp_python==//p' constraints.txt)
[ -n "$version" ] || { echo "constraints.txt pins no llama_cpp_python" >&2; exit 1; }
flags=${LLAMA_CMAKE_ARGS:--DGGML_NATIVE=OFF}
key=$(printf '%s|%s' "$version" "$flags" | sha256sum | cut -c1-12)
dir=${CONTREACT_WHEEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/contreact/wheels}/llama-cpp-python-$version-$key
if ! ls "$dir"/llama_cpp_python-*.whl >/dev/null 2>&1; then
  echo "building llama-cpp-python $version ($flags): several minutes, once per machine" >&2
  rm -rf "$dir.tmp"
  mkdir -p "$dir.tmp"
  CMAKE_ARGS="$flags" "$PY" -m pip wheel --quiet --no-deps --no-binary llama-cpp-python \
    --no-cache-dir -w "$dir.tmp" "llama-cpp-python==$version" \
    2> >(grep -v 'is ignored: it is neither' >&2)
  rm -rf "$dir"
  mv "$dir.tmp" "$dir"
fi
echo "$dir"
