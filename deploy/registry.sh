#!/usr/bin/env bash
# Serve a container registry for a swarm's images with Debian's `docker-registry`
# (Docker's Distribution), no network needed; print its address (the only line on
# stdout; progress and errors on stderr). Used by the swarm test and by labs that have
# no registry yet (docs/how-to/deploy-swarm.md).
#
#   CONTREACT_REGISTRY_ADDR=127.0.0.1:5000 deploy/registry.sh     # start (or find) it
#   deploy/registry.sh stop
#
#   CONTREACT_REGISTRY_ADDR  where it listens (127.0.0.1:5000). Docker pulls over plain
#                            HTTP from loopback only: for other nodes give it TLS
#                            (CONTREACT_REGISTRY_CERT and _KEY, a certificate the nodes
#                            trust in /etc/docker/certs.d/HOST:PORT/ca.crt).
#   CONTREACT_REGISTRY_DIR   its config, pid file, log and (by default) storage
#                            (/var/lib/contreact-registry)
#   CONTREACT_REGISTRY_DATA  its storage, when elsewhere ($CONTREACT_REGISTRY_DIR/data):
#                            the test suite keeps it in the user's cache, shared by
#                            every clone, so layers pushed once are not compressed and
#                            pushed again by the next clone
#
# As root with apt-get it installs the package when missing (no service is started by
# the package scripts). Exit 1 with one line on stderr when it cannot be had.
set -euo pipefail

ADDR=${CONTREACT_REGISTRY_ADDR:-127.0.0.1:5000}
DIR=${CONTREACT_REGISTRY_DIR:-/var/lib/contreact-registry}
DATA=${CONTREACT_REGISTRY_DATA:-$DIR/data}
PIDFILE=$DIR/registry.pid

say() { printf 'registry: %s\n' "$*" >&2; }
fail() { say "$*"; exit 1; }

scheme() { [ -n "${CONTREACT_REGISTRY_CERT:-}" ] && echo https || echo http; }
answers() { curl -fsS -k -o /dev/null --max-time 5 "$(scheme)://$ADDR/v2/" 2>/dev/null; }

if [ "${1:-}" = stop ]; then
  if [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
    kill "$(cat "$PIDFILE")"
    say "stopped the registry on $ADDR"
  fi
  rm -f "$PIDFILE"
  exit 0
fi

if answers; then
  say "a registry answers on $ADDR"
  printf '%s\n' "$ADDR"
  exit 0
fi

if ! command -v docker-registry >/dev/null; then
  [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null ||
    fail "no docker-registry here and it cannot be installed (needs root and apt-get):" \
      "install Debian's docker-registry, or run any registry and set CONTREACT_IMAGE_PREFIX"
  say "installing Debian's docker-registry"
  policy=/usr/sbin/policy-rc.d made=""
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && made=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    docker-registry >/dev/null 2>&1 || {
    apt-get update -qq >&2 &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        docker-registry >&2
  } || { [ -n "$made" ] && rm -f "$policy"; fail "apt-get install docker-registry failed"; }
  [ -n "$made" ] && rm -f "$policy"
fi

mkdir -p "$DIR" "$DATA"
tls=""
if [ -n "${CONTREACT_REGISTRY_CERT:-}" ]; then
  tls=$(printf '  tls:\n    certificate: %s\n    key: %s\n' \
    "$CONTREACT_REGISTRY_CERT" "${CONTREACT_REGISTRY_KEY:?the key of CONTREACT_REGISTRY_CERT}")
fi
cat >"$DIR/config.yml" <<EOF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $DATA
  delete:
    enabled: true
http:
  addr: $ADDR
$tls
EOF
say "starting docker-registry on $ADDR (storage $DATA, log $DIR/registry.log)"
nohup docker-registry serve "$DIR/config.yml" >"$DIR/registry.log" 2>&1 </dev/null &
echo $! >"$PIDFILE"
for _ in $(seq 1 60); do
  if answers; then
    printf '%s\n' "$ADDR"
    exit 0
  fi
  kill -0 "$(cat "$PIDFILE")" 2>/dev/null ||
    fail "docker-registry ended at start: $(tail -n 1 "$DIR/registry.log")"
  sleep 0.5
done
fail "docker-registry did not answer on $ADDR within 30 s; see $DIR/registry.log"
