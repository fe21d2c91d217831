#!/usr/bin/env bash
# ContReAct on a Docker Swarm: push the images to a registry, check, deploy the stack.
# Run on a manager node (or with DOCKER_HOST naming one); docs/how-to/deploy-swarm.md.
#
#   deploy/stack.sh push             # LOCAL_PREFIX/SERVICE:TAG -> CONTREACT_IMAGE_PREFIX/SERVICE:TAG
#   deploy/stack.sh check            # what `deploy` checks, without deploying
#   deploy/stack.sh deploy [STACK]   # check, then docker stack deploy (STACK: contreact)
#
# Settings (the environment, or a file named by CONTREACT_STACK_ENV, read first):
#   CONTREACT_IMAGE_PREFIX  REGISTRY/NAMESPACE every node pulls from (registry.lab:5000/contreact)
#   CONTREACT_IMAGE_TAG     the images' tag (latest)
#   CONTREACT_LOCAL_PREFIX  what `push` tags from: the names `docker compose build` gave (contreact)
#   REDIS_PASSWORD          Redis's password (required: Redis is published on its node)
#   CONTREACT_STACK_FILE    the stack file, or files separated by `:` as COMPOSE_FILE's
#                           (docker-stack.yml beside this folder; a Redis that fails
#                           over: docker-stack.yml:docker-stack.sentinel.yml)
#   and the stack file's own: CONTREACT_ORCHESTRATORS, CONTREACT_LLM_WORKERS, ...
#
# A deployment without a registry is refused here, with one line: a swarm's nodes pull
# the images, so a name no registry serves leaves every task pending on the nodes that
# do not have it (`docker stack deploy` itself only warns). Exit 1, one line on stderr,
# for every refusal.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ -n "${CONTREACT_STACK_ENV:-}" ]; then
  set -a
  # shellcheck disable=SC1090
  . "$CONTREACT_STACK_ENV"
  set +a
fi
IFS=: read -r -a STACK_FILES <<<"${CONTREACT_STACK_FILE:-$HERE/docker-stack.yml}"
TAG=${CONTREACT_IMAGE_TAG:-latest}
SERVICES=(orchestrator llm-worker memory embedder ui assessor cli)
SECRET=${CONTREACT_OPENROUTER_SECRET:-contreact_openrouter_api_key}

say() { printf 'stack: %s\n' "$*" >&2; }
fail() { say "$*"; exit 1; }

registry_of() { # the registry part of an image prefix, or nothing when it names none
  local first=${1%%/*}
  [ "$first" != "$1" ] || { printf ''; return; }
  case "$first" in
    *.* | *:* | localhost) printf '%s' "$first" ;;
    *) printf '' ;;
  esac
}

need_prefix() {
  local prefix=${CONTREACT_IMAGE_PREFIX:-}
  [ -n "$prefix" ] || fail "no registry: set CONTREACT_IMAGE_PREFIX to REGISTRY/NAMESPACE" \
    "(e.g. registry.lab:5000/contreact), push the images there with \`deploy/stack.sh push\`;" \
    "every node of a swarm pulls them"
  [ -n "$(registry_of "$prefix")" ] || fail "CONTREACT_IMAGE_PREFIX=$prefix names no registry:" \
    "a swarm's nodes pull the images, so give REGISTRY/NAMESPACE (a host with a dot or a" \
    "port, or localhost: e.g. registry.lab:5000/$prefix) and \`deploy/stack.sh push\` there"
}

in_registry() { # in_registry IMAGE: the registry serves it (TLS, or plain HTTP if insecure)
  docker manifest inspect --insecure "$1" >/dev/null 2>&1
}

check() {
  local file
  for file in "${STACK_FILES[@]}"; do
    [ -f "$file" ] || fail "no stack file $file (CONTREACT_STACK_FILE: files separated by :)"
  done
  need_prefix
  local prefix=$CONTREACT_IMAGE_PREFIX registry
  registry=$(registry_of "$prefix")
  [ -n "${REDIS_PASSWORD:-}" ] ||
    fail "no REDIS_PASSWORD: Redis is published on its node; set one (openssl rand -hex 32)"
  local service missing=()
  for service in "${SERVICES[@]}"; do
    in_registry "$prefix/$service:$TAG" || missing+=("$service")
  done
  if [ "${#missing[@]}" = "${#SERVICES[@]}" ]; then
    if ! curl -fsS -o /dev/null --max-time 10 "http://$registry/v2/" 2>/dev/null &&
      ! curl -fsS -o /dev/null --max-time 10 "https://$registry/v2/" 2>/dev/null; then
      fail "the registry $registry does not answer (GET /v2/): start it" \
        "(docs/how-to/deploy-swarm.md: a registry) or fix CONTREACT_IMAGE_PREFIX"
    fi
  fi
  [ "${#missing[@]}" = 0 ] || fail "the registry $registry has no $prefix/{$(
    IFS=,
    echo "${missing[*]}"
  )}:$TAG: run \`deploy/stack.sh push\` (or set CONTREACT_IMAGE_TAG)"
  local role
  role=$(docker info --format '{{.Swarm.LocalNodeState}} {{.Swarm.ControlAvailable}}' 2>/dev/null) ||
    fail "no Docker engine answers (DOCKER_HOST=${DOCKER_HOST:-default})"
  [ "$role" = "active true" ] ||
    fail "this engine is not a swarm manager ($role): \`docker swarm init\` or run on a manager"
  docker secret inspect "$SECRET" >/dev/null 2>&1 ||
    fail "no swarm secret $SECRET: printf %s \"\$OPENROUTER_API_KEY\" | docker secret create" \
      "$SECRET - (any value, e.g. none, when no run calls OpenRouter)"
  local label node labelled labels
  # The node labels the files place services by (contreact.redis, contreact.data, ...).
  labels=$(grep -ho 'node\.labels\.[A-Za-z0-9._-]* == true' "${STACK_FILES[@]}" |
    sed 's/^node\.labels\.//; s/ == true$//' | sort -u)
  for label in $labels; do
    labelled=""
    for node in $(docker node ls -q); do
      if [ "$(docker node inspect --format "{{index .Spec.Labels \"$label\"}}" "$node")" = true ]; then
        labelled=1
        break
      fi
    done
    [ -n "$labelled" ] || fail "no node has the label $label=true, so its services would stay" \
      "pending: docker node update --label-add $label=true NODE (docs/how-to/deploy-swarm.md)"
  done
}

push() {
  need_prefix
  local local_prefix=${CONTREACT_LOCAL_PREFIX:-contreact} service from to
  for service in "${SERVICES[@]}"; do
    from=$local_prefix/$service:$TAG
    to=$CONTREACT_IMAGE_PREFIX/$service:$TAG
    docker image inspect "$from" >/dev/null 2>&1 ||
      fail "no image $from here: build it first (docker compose build) or set CONTREACT_LOCAL_PREFIX"
    say "pushing $to"
    docker tag "$from" "$to"
    docker push --quiet "$to" >/dev/null || fail "docker push $to failed (is the registry up?)"
  done
}

case "${1:-}" in
  push) push ;;
  check) check && say "ready to deploy ${STACK_FILES[*]}" ;;
  deploy)
    stack=${2:-contreact}
    check
    say "deploying ${STACK_FILES[*]} as $stack"
    files=()
    for file in "${STACK_FILES[@]}"; do files+=(-c "$file"); done
    docker stack deploy --with-registry-auth --prune "${files[@]}" "$stack" >&2
    ;;
  *) fail "usage: deploy/stack.sh push | check | deploy [STACK]" ;;
esac
