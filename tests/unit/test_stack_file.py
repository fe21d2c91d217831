"""The swarm stack file, offline: valid against the Compose specification, passing every
service the same settings, volumes, health checks and images as docker-compose.yml
(the two files cannot be one, docker-stack.yml says why), with the `deploy:` keys a
swarm needs; and `deploy/stack.sh` refusing, in one line, a stack without a registry.
docker-stack.sentinel.yml, given after it (a Redis that fails over), likewise: valid,
its Redis servers and sentinels placed, named and reached consistently, every service
switched to the sentinels with the settings it reads. The deployment itself:
tests/docker/test_swarm_stack.py."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft201909Validator
from pydantic import AliasChoices
from pydantic_settings import BaseSettings

from contreact_bus.local_redis import free_port
from tests.support.swarm_redis import MASTER_NAME, REDIS_SERVERS, SENTINEL_LABELS, SENTINELS
from tests.support.swarm_stack import LABELS, SERVICES
from tests.unit.test_compose_file import SETTINGS

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "tests/schemas/compose-spec.json").read_text())
STACK: dict[str, Any] = yaml.safe_load((ROOT / "docker-stack.yml").read_text())
COMPOSE: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SENTINEL: dict[str, Any] = yaml.safe_load((ROOT / "docker-stack.sentinel.yml").read_text())
ONLY_IN_THE_STACK = {"llm-worker": {"OPENROUTER_API_KEY_FILE"}}
"""The swarm secret's file (the Compose stack passes no OpenRouter key)."""
PLACED = {
    "redis": "contreact.redis",
    "orchestrator": "contreact.data",
    "memory": "contreact.data",
    "assessor": "contreact.data",
    "embedder": "contreact.data",
    "ui": "contreact.ui",
    "llm-worker": "contreact.gpu",
}
"""Where each service runs (node labels); the services sharing `runs` on one label."""
ONE_TASK = {"redis", "memory", "ui"}
"""A volume with one writer, or a host port: one task, the old one stopped first."""


def interpolated(text: str) -> dict[str, Any]:
    """The file as Docker reads it with no variable set: `${X:-d}` is d, a required
    `${X:?message}` is given a value, `$$` is `$`."""
    text = re.sub(r"\$\{[A-Z0-9_]+:-([^}]*)\}", r"\1", text)
    text = re.sub(r"\$\{[A-Z0-9_]+:\?[^}]*\}", "set", text)
    data = yaml.safe_load(text.replace("$$", "$"))
    assert isinstance(data, dict)
    return data


@pytest.mark.parametrize("name", ["docker-stack.yml", "docker-stack.sentinel.yml"])
def test_the_stack_file_is_valid_against_the_compose_specification(name: str) -> None:
    data = interpolated((ROOT / name).read_text())
    errors = sorted(Draft201909Validator(SCHEMA).iter_errors(data), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors)


def test_the_stack_runs_every_service_but_the_model_server_and_the_cli() -> None:
    assert set(STACK["services"]) == set(SERVICES) == set(COMPOSE["services"]) - {"ollama", "cli"}
    assert set(PLACED) == set(SERVICES)
    assert set(STACK["volumes"]) == set(COMPOSE["volumes"]) - {"ollama-models"}


@pytest.mark.parametrize("name", SERVICES)
def test_each_service_gets_what_compose_gives_it(name: str) -> None:
    stack, compose = STACK["services"][name], COMPOSE["services"][name]
    extra = ONLY_IN_THE_STACK.get(name, set())
    assert set(stack["environment"]) == set(compose["environment"]) | extra
    assert stack["environment"]["REDIS_URL" if name != "redis" else "REDIS_PASSWORD"]
    assert stack.get("volumes") == compose.get("volumes")
    assert stack["healthcheck"]["test"] == compose["healthcheck"]["test"]
    assert stack.get("command") == compose.get("command")
    assert stack.get("init") == compose.get("init")
    image = re.sub(r"\$\{CONTREACT_IMAGE_PREFIX:[^}]*\}", "PREFIX", stack["image"])
    assert image == re.sub(r"\$\{CONTREACT_IMAGE_PREFIX:[^}]*\}", "PREFIX", compose["image"])


@pytest.mark.parametrize("name", SERVICES)
def test_each_service_has_a_swarm_deployment(name: str) -> None:
    service = STACK["services"][name]
    # What `docker stack deploy` ignores or refuses has no place here.
    assert not {"build", "depends_on", "profiles", "restart", "container_name"} & set(service)
    deploy = service["deploy"]
    assert deploy["restart_policy"]["condition"] == "any"
    assert deploy["placement"]["constraints"] == [f"node.labels.{PLACED[name]} == true"]
    assert PLACED[name] in LABELS
    assert deploy["endpoint_mode"] == "dnsrr"  # no virtual IP: no IPVS needed
    update = deploy["update_config"]
    assert update["failure_action"] == "rollback" and update["parallelism"] == 1
    assert update["order"] == ("stop-first" if name in ONE_TASK else "start-first")
    assert deploy["resources"]["limits"]["memory"]
    assert "cpus" not in deploy["resources"]["reservations"], "a CPU reservation can strand tasks"
    if name in ONE_TASK:
        assert deploy["replicas"] == 1
    assert service["networks"] == ["backend"]
    for port in service.get("ports", []):
        assert port["mode"] == "host", "no routing mesh: published on the service's node"


def test_replicas_of_the_scaled_services_come_from_the_environment() -> None:
    replicas = {n: s["deploy"]["replicas"] for n, s in STACK["services"].items()}
    assert replicas["orchestrator"] == "${CONTREACT_ORCHESTRATORS:-2}"
    assert replicas["llm-worker"] == "${CONTREACT_LLM_WORKERS:-4}"
    assert replicas["assessor"] == "${CONTREACT_ASSESSORS:-2}"


def test_the_openrouter_key_is_a_secret_and_redis_needs_a_password() -> None:
    worker = STACK["services"]["llm-worker"]
    (secret,) = worker["secrets"]
    assert worker["environment"]["OPENROUTER_API_KEY_FILE"] == f"/run/secrets/{secret['target']}"
    assert STACK["secrets"][secret["source"]]["external"] is True
    assert all(
        "OPENROUTER_API_KEY" not in s["environment"]
        for s in COMPOSE["services"].values()
        if "environment" in s
    )
    url = STACK["services"]["orchestrator"]["environment"]["REDIS_URL"]
    assert url.startswith("redis://:${REDIS_PASSWORD:?")
    assert STACK["networks"]["backend"] == {"driver": "overlay", "attachable": True}


def deploy(**env: str) -> subprocess.CompletedProcess[str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("CONTREACT_", "REDIS_"))}
    return subprocess.run(
        ["bash", str(ROOT / "deploy/stack.sh"), "deploy", "lab"],
        env={**keep, **env},
        capture_output=True,
        text=True,
        timeout=120,  # guards a hang only
    )


@pytest.mark.parametrize(
    ("prefix", "says"),
    [
        ("", "no registry: set CONTREACT_IMAGE_PREFIX to REGISTRY/NAMESPACE"),
        ("contreact", "CONTREACT_IMAGE_PREFIX=contreact names no registry"),
        ("team/contreact", "CONTREACT_IMAGE_PREFIX=team/contreact names no registry"),
    ],
)
def test_a_stack_without_a_registry_is_refused_in_one_line(prefix: str, says: str) -> None:
    proc = deploy(CONTREACT_IMAGE_PREFIX=prefix, REDIS_PASSWORD="x")
    assert proc.returncode == 1
    (line,) = proc.stderr.splitlines()
    assert line.startswith(f"stack: {says}") and "deploy/stack.sh push" in line, line
    assert proc.stdout == ""


def test_a_registry_that_does_not_answer_is_named() -> None:
    registry = f"127.0.0.1:{free_port()}"  # nothing listens there
    proc = deploy(CONTREACT_IMAGE_PREFIX=f"{registry}/contreact", REDIS_PASSWORD="x")
    assert proc.returncode == 1
    (line,) = proc.stderr.splitlines()
    assert f"the registry {registry} does not answer" in line, line


def test_a_stack_without_a_redis_password_is_refused() -> None:
    proc = deploy(CONTREACT_IMAGE_PREFIX="registry.lab:5000/contreact")
    assert proc.returncode == 1
    (line,) = proc.stderr.splitlines()
    assert "no REDIS_PASSWORD" in line, line


def test_every_variable_the_stack_and_its_scripts_read_is_in_env_example() -> None:
    example = (ROOT / ".env.example").read_text()
    variables = set()
    for stack_file in ("docker-stack.yml", "docker-stack.sentinel.yml"):
        variables |= set(re.findall(r"\$\{([A-Z0-9_]+)", (ROOT / stack_file).read_text()))
    for script in ("deploy/stack.sh", "deploy/registry.sh"):
        variables |= set(re.findall(r"\$\{(CONTREACT_[A-Z_]+)", (ROOT / script).read_text()))
    assert {"CONTREACT_ORCHESTRATORS", "CONTREACT_REGISTRY_ADDR", "CONTREACT_REDIS_2_PORT"} <= (
        variables
    )
    missing = sorted(v for v in variables if not re.search(rf"^# {v}=", example, re.M))
    assert not missing


SERVERS = {n: s for n, s in SENTINEL["services"].items() if "REDIS_SELF" in s["environment"]}
SENTINEL_SERVICES = {n: s for n, s in SENTINEL["services"].items() if n.startswith("sentinel-")}


def reads(settings: type[BaseSettings]) -> set[str]:
    """Every variable a service's settings read (each alias, or the prefixed name)."""
    names = set()
    prefix = str(settings.model_config.get("env_prefix", ""))
    for field, info in settings.model_fields.items():
        alias = info.validation_alias
        if isinstance(alias, AliasChoices):
            names |= {c for c in alias.choices if isinstance(c, str)}
        else:
            names.add(f"{prefix}{field}".upper())
    return names


def test_the_sentinel_file_runs_three_servers_and_three_sentinels() -> None:
    assert set(SERVERS) == set(REDIS_SERVERS) and set(SENTINEL_SERVICES) == set(SENTINELS)
    assert set(SENTINEL["services"]) == set(SERVERS) | set(SENTINEL_SERVICES) | (
        set(SERVICES) - {"redis"}
    ), "and switches every platform service of docker-stack.yml to them"
    for name, service in SERVERS.items():
        env = service["environment"]
        assert env["REDIS_SELF"] == name, "a server announces its own name"
        assert env["REDIS_SERVERS"].split() == list(SERVERS)
        assert env["REDIS_SENTINEL_HOSTS"].split() == list(SENTINEL_SERVICES)
        script = " ".join(service["command"])
        assert "--replica-announce-ip" in script and "--masterauth" in script
        assert "--requirepass" in script and "--appendonly yes" in script
        # Later than the sentinels' verdict (5 s): a dead primary is failed over.
        assert service["deploy"]["restart_policy"]["delay"] == "10s"
    for name, service in SENTINEL_SERVICES.items():
        env = service["environment"]
        assert env["SENTINEL_SELF"] == name
        assert env["REDIS_SERVERS"].split() == list(SERVERS)
        assert env["REDIS_SENTINEL_HOSTS"].split() == list(SENTINEL_SERVICES)
        script = " ".join(service["command"])
        for line in ("sentinel resolve-hostnames yes", "sentinel announce-hostnames yes",
                     "sentinel announce-ip $$SENTINEL_SELF", "requirepass", "auth-pass",
                     "--sentinel"):  # fmt: skip
            assert line in script, (name, line)
        # Names before the monitor line, or the monitored name is not accepted.
        assert script.index("resolve-hostnames") < script.index("sentinel monitor")
        assert "monitor $$REDIS_MASTER_NAME $$primary 6379 2" in script, "quorum: 2 of 3"


def test_each_server_and_sentinel_has_its_node_volume_and_one_task() -> None:
    base = STACK["services"]["redis"]
    # `redis` is docker-stack.yml's: this file changes its command, environment and
    # restart delay and health check's start period only (a merged health check's
    # list of words would be appended to).
    assert set(SERVERS["redis"]) == {"command", "init", "environment", "healthcheck", "deploy"}
    assert set(SERVERS["redis"]["healthcheck"]) == {"start_period"}
    assert set(SERVERS["redis"]["deploy"]) == {"restart_policy"}
    assert SERVERS["redis"]["command"] == SERVERS["redis-2"]["command"]
    placed = {"redis": base["deploy"]["placement"]["constraints"]}
    volumes = {"redis": base["volumes"]}
    for name, service in SENTINEL["services"].items():
        if name in SERVERS or name in SENTINEL_SERVICES:
            if name == "redis":
                continue
            deploy = service["deploy"]
            assert deploy["endpoint_mode"] == "dnsrr" and deploy["replicas"] == 1
            assert deploy["update_config"]["order"] == "stop-first"
            assert deploy["restart_policy"]["condition"] == "any"
            assert deploy["resources"]["limits"]["memory"]
            assert service["networks"] == ["backend"]
            assert service["image"] == base["image"], "the same Redis image"
            assert service["healthcheck"]["test"][0] == "CMD-SHELL"
            placed[name] = deploy["placement"]["constraints"]
            volumes[name] = service.get("volumes", [])
            for port in service.get("ports", []):
                assert port["mode"] == "host" and port["target"] == 6379
    labels = [re.sub(r"node\.labels\.(\S+) == true", r"\1", c) for (c,) in placed.values()]
    assert set(labels) == {"contreact.redis", *SENTINEL_LABELS}
    assert [placed[s] for s in SERVERS] == [placed[s] for s in SENTINEL_SERVICES], (
        "one sentinel beside each server: a node's death takes one of each"
    )
    assert len({placed[s][0] for s in SERVERS}) == len(SERVERS), "a node label each"
    assert [v[0].split(":")[1] for s, v in volumes.items() if s in SERVERS] == ["/data"] * 3
    own = [v[0].split(":")[0] for s, v in volumes.items() if s in SERVERS]
    assert len(set(own)) == 3 and set(own) - {"redis-data"} == set(SENTINEL["volumes"])
    assert all(not volumes[s] for s in SENTINEL_SERVICES), "a sentinel keeps nothing"


@pytest.mark.parametrize("name", sorted(set(SERVICES) - {"redis"}))
def test_every_service_reaches_redis_through_the_sentinels(name: str) -> None:
    env = SENTINEL["services"][name]["environment"]
    sentinels = env["REDIS_SENTINELS"].split(",")
    assert sentinels == [f"{s}:26379" for s in SENTINEL_SERVICES]
    assert env["REDIS_MASTER_NAME"] == "${REDIS_MASTER_NAME:-" + MASTER_NAME + "}"
    # The names the health check reads, and only settings the service reads.
    assert {"REDIS_SENTINELS", "REDIS_MASTER_NAME"} <= reads(SETTINGS[name])
    assert set(env) <= reads(SETTINGS[name]), set(env) - reads(SETTINGS[name])
    waits = "REDIS_WAIT_REPLICAS" in reads(SETTINGS[name])
    assert ("REDIS_WAIT_REPLICAS" in env) == waits, "every service that WAITs, waits"
    if waits:
        assert env["REDIS_WAIT_REPLICAS"] == "${REDIS_WAIT_REPLICAS:-1}"
    for server in SERVERS.values():  # the sentinels monitor the name the services ask for
        assert server["environment"]["REDIS_MASTER_NAME"] == env["REDIS_MASTER_NAME"]


def test_a_stack_file_that_is_not_there_is_refused() -> None:
    proc = deploy(
        CONTREACT_STACK_FILE=f"{ROOT / 'docker-stack.yml'}:{ROOT / 'docker-stack.sentinl.yml'}",
        CONTREACT_IMAGE_PREFIX="registry.lab:5000/contreact",
        REDIS_PASSWORD="x",
    )
    assert proc.returncode == 1
    (line,) = proc.stderr.splitlines()
    assert "no stack file" in line and "docker-stack.sentinl.yml" in line, line
