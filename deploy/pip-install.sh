#!/bin/sh
# pip-install.sh deps|code PACKAGE_DIR[EXTRAS]...  (inside an image's build stage)
#
#   deps  install what the packages depend on into the virtual environment /opt/venv,
#         from their pyproject.toml files alone (copied first, so this layer is rebuilt
#         only when a dependency list changes), and not the packages themselves
#   code  install the packages, without their dependencies, into /opt/app (on
#         PYTHONPATH; their commands in /opt/app/bin): the final stage copies the two
#         folders apart, so a code change does not copy the dependencies again. Built
#         with the build backend (hatchling) that `deps` put into /opt/backend, a folder
#         of the build stage alone: no build environment made per package and code change.
#
# PIP_INSTALL_ARGS adds pip options (the tests pass --no-index, so that only the wheels
# in /wheels are used); a wheel in /wheels is always preferred to the index.
set -eu
mode=$1
shift
cd /src
specs=""
names=""
for spec in "$@"; do
  specs="$specs ./$spec"
  dir=${spec%%\[*}
  names="$names $(sed -n 's/^name = "\(.*\)"$/\1/p' "$dir/pyproject.toml")"
  if [ "$mode" = deps ]; then
    # A placeholder module, so the build backend finds the package it was told to ship.
    module=$(sed -n 's/^packages = \["\([a-z_]*\)"\]/\1/p' "$dir/pyproject.toml")
    mkdir -p "$dir/$module" && touch "$dir/$module/__init__.py"
  fi
done
# shellcheck disable=SC2086  # PIP_INSTALL_ARGS, specs and names are lists (no spaces)
if [ "$mode" = deps ]; then
  /opt/venv/bin/pip install --no-cache-dir --find-links /wheels ${PIP_INSTALL_ARGS:-} $specs
  /opt/venv/bin/pip uninstall --yes $names
  if [ ! -d /opt/backend ]; then
    /opt/venv/bin/pip install --no-cache-dir --find-links /wheels ${PIP_INSTALL_ARGS:-} \
      --target /opt/backend "$(sed -n 's/^requires = \["\(.*\)"\]/\1/p' "$dir/pyproject.toml")"
  fi
else
  PYTHONPATH=/opt/backend /opt/venv/bin/pip install --no-cache-dir --no-deps \
    --no-build-isolation --target /opt/app $specs
fi
