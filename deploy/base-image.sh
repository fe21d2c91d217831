#!/usr/bin/env bash
# A local Python base image for machines that reach no container registry: Debian
# bookworm (Python 3.11) from Debian's packages with debootstrap, imported with
# `docker import`. Built once and kept under a stable tag (printed on stdout, the only
# line there); the Dockerfiles take it as their BASE_IMAGE build argument in place of
# the official python:3.11-slim. Needs root (debootstrap) unless the image exists.
#
# The tag names the recipe: change the package list or the cleaning below and bump
# RECIPE, so that every machine builds the new one instead of keeping the old.
set -euo pipefail

RECIPE=1
TAG=${CONTREACT_BASE_IMAGE_TAG:-contreact-local/python:3.11-bookworm-r$RECIPE}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
PACKAGES=python3,python3-venv,python3-pip,ca-certificates

say() { printf 'base-image: %s\n' "$*" >&2; }
fail() { say "$*"; exit 1; }

if docker image inspect "$TAG" >/dev/null 2>&1; then
  say "$TAG exists"
  printf '%s\n' "$TAG"
  exit 0
fi
if ! command -v debootstrap >/dev/null; then
  [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null ||
    fail "no image $TAG and no debootstrap to make it (needs root and apt-get);" \
      "or pass any Python 3.11 image as CONTREACT_TEST_BASE_IMAGE"
  say "installing debootstrap from Debian's packages"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null 2>&1 || {
    apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >&2
  }
fi
[ "$(id -u)" = 0 ] || fail "debootstrap needs root to make $TAG"

rootfs=$(mktemp -d "${TMPDIR:-/tmp}/contreact-rootfs.XXXXXX")
trap 'rm -rf "$rootfs"' EXIT
say "debootstrap bookworm ($PACKAGES) into $rootfs: about a minute"
debootstrap --variant=minbase --include="$PACKAGES" bookworm "$rootfs" "$MIRROR" \
  >"$rootfs.log" 2>&1 || fail "debootstrap failed: $(tail -n 3 "$rootfs.log" | tr '\n' ' ')"
rm -f "$rootfs.log"
# What python:3.11-slim does not carry either: downloaded packages, package lists,
# documentation and translations.
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* \
  "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/locale/* \
  "$rootfs"/usr/share/info/* "$rootfs"/var/log/*.log
tar -C "$rootfs" -c . | docker import \
  --change 'ENV LANG=C.UTF-8' \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'CMD ["python3"]' \
  --message "contreact local base: debootstrap bookworm minbase + $PACKAGES (recipe $RECIPE)" \
  - "$TAG" >/dev/null
say "made $TAG ($(docker image inspect --format '{{.Size}}' "$TAG" | awk '{printf "%d MB", $1/1e6}'))"
printf '%s\n' "$TAG"
