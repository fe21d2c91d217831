#!/usr/bin/env bash
# Make a Docker engine and a Compose answer; print the DOCKER_HOST to use (the only line
# on stdout; progress and errors go to stderr). Used by .ci/run, `make docker-engine`
# and the docker e2e test's fixture.
#
#   1. An engine that already answers (DOCKER_HOST, or the client's default) is used.
#   2. Else the project's own engine, if it answers on CONTREACT_DOCKER_SOCKET.
#   3. Else, as root with apt-get: install Debian's docker.io (engine 20.10), start
#      dockerd in the background on CONTREACT_DOCKER_SOCKET and wait until it answers.
#
# The project's engine listens on its own socket, not /var/run/docker.sock, so that
# other programs on the machine (another checkout's testcontainers, say) do not start
# using an engine they did not ask for. Compose: `docker compose` (v2) when present,
# else Debian's docker-compose 1.29, installed the same way. Exit 1 with one line on
# stderr when neither can be had.
set -euo pipefail

SOCKET=${CONTREACT_DOCKER_SOCKET:-/run/contreact-docker/docker.sock}
RUN_DIR=$(dirname "$SOCKET")
OURS="unix://$SOCKET"

say() { printf 'docker-engine: %s\n' "$*" >&2; }
fail() { say "$*"; exit 1; }

answers() { # answers [DOCKER_HOST]
  if [ -n "${1:-}" ]; then DOCKER_HOST=$1 timeout 10 docker info >/dev/null 2>&1
  else timeout 10 docker info >/dev/null 2>&1; fi
}

can_install() { [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; }

apt_install() { # apt_install PACKAGE...
  can_install || return 1
  say "installing $* from Debian's packages"
  # Services must not start from the package scripts (the engine is started below,
  # on the project's socket); a policy-rc.d that refuses is the Debian way to say so.
  local policy=/usr/sbin/policy-rc.d made=""
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && made=1
  fi
  local status=0
  if [ -z "$(find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -print -quit 2>/dev/null)" ]; then
    apt-get update -qq >&2 || status=$?
  fi
  if [ "$status" = 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" \
      >/dev/null 2>&1 || {
      apt-get update -qq >&2 &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2
    } || status=$?
  fi
  [ -n "$made" ] && rm -f "$policy"
  return "$status"
}

ensure_compose() {
  if docker compose version >/dev/null 2>&1 || command -v docker-compose >/dev/null; then
    return 0
  fi
  apt_install docker-compose ||
    fail "no Docker Compose: install Compose v2 (the docker-compose-plugin) or docker-compose"
}

start_engine() {
  command -v dockerd >/dev/null || apt_install docker.io iptables ||
    fail "no Docker engine answers and none can be installed here (needs root and apt-get):" \
      "install Docker (https://docs.docker.com/engine/install/) and start it"
  command -v docker >/dev/null || fail "dockerd is installed but the docker client is not"
  mkdir -p "$RUN_DIR"
  local pidfile="$RUN_DIR/dockerd.pid" log="$RUN_DIR/dockerd.log"
  if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    say "dockerd (pid $(cat "$pidfile")) is starting; waiting for it"
  else
    rm -f "$pidfile" "$SOCKET"
    say "starting dockerd on $OURS (log $log)"
    nohup dockerd --host "$OURS" --pidfile "$pidfile" --exec-root "$RUN_DIR/exec" \
      >"$log" 2>&1 </dev/null &
  fi
  local i
  for i in $(seq 1 120); do
    answers "$OURS" && return 0
    sleep 0.5
  done
  fail "dockerd did not answer on $OURS within 60 s; see $log: $(tail -n 1 "$log" 2>/dev/null)"
}

if answers; then
  host=${DOCKER_HOST:-}
  if [ -z "$host" ]; then
    host=$(docker context inspect --format '{{.Endpoints.docker.Host}}' 2>/dev/null || true)
  fi
  host=${host:-unix:///var/run/docker.sock}
elif answers "$OURS"; then
  host=$OURS
else
  start_engine
  host=$OURS
fi
ensure_compose
say "engine answers at $host"
printf '%s\n' "$host"
