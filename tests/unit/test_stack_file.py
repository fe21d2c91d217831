"""The swarm stack file, offline: valid against the Compose specification, passing every
service the same settings, volumes, health checks and images as docker-compose.yml
(the two files cannot be one, docker-stack.yml says why), with the `deploy:` keys a
swarm needs; and `deploy/stack.sh` refusing, in one line, a stack without a registry.
The deployment itself: tests/docker/test_swarm_stack.py."""

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

from contreact_bus.local_redis import free_port
from tests.support.swarm_stack import LABELS, SERVICES

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "tests/schemas/compose-spec.json").read_text())
STACK: dict[str, Any] = yaml.safe_load((ROOT / "docker-stack.yml").read_text())
COMPOSE: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
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
    text = re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", text)
    text = re.sub(r"\$\{[A-Z_]+:\?[^}]*\}", "set", text)
    data = yaml.safe_load(text.replace("$$", "$"))
    assert isinstance(data, dict)
    return data


def test_the_stack_file_is_valid_against_the_compose_specification() -> None:
    data = interpolated((ROOT / "docker-stack.yml").read_text())
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
    variables = set(re.findall(r"\$\{([A-Z_]+)", (ROOT / "docker-stack.yml").read_text()))
    for script in ("deploy/stack.sh", "deploy/registry.sh"):
        variables |= set(re.findall(r"\$\{(CONTREACT_[A-Z_]+)", (ROOT / script).read_text()))
    assert {"CONTREACT_ORCHESTRATORS", "CONTREACT_REGISTRY_ADDR"} <= variables
    missing = sorted(v for v in variables if not re.search(rf"^# {v}=", example, re.M))
    assert not missing
