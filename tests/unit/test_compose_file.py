"""The Compose files, offline: valid against the Compose specification's JSON schema
(vendored, see tests/schemas/README.md), and holding what the platform promises
(health checks, restart policies, local ports, volumes, every setting passed through)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft201909Validator
from pydantic import AliasChoices
from pydantic_settings import BaseSettings

from contreact_assessor.settings import AssessorSettings
from contreact_cli.settings import CLISettings
from contreact_cli.stack.processes import SERVICE_MODULES
from contreact_embedder.settings import EmbedderSettings
from contreact_llm.settings import LLMWorkerSettings
from contreact_memory.settings import MemorySettings
from contreact_orchestrator.settings import OrchestratorSettings
from contreact_ui.settings import UISettings
from tests.support.compose_stack import BUILT_SERVICES, STACK_SERVICES

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "tests/schemas/compose-spec.json").read_text())
COMPOSE_FILES = ("docker-compose.yml", "docker-compose.gpu.yml", "deploy/test/compose.yml")
SETTINGS: dict[str, type[BaseSettings]] = {
    "orchestrator": OrchestratorSettings,
    "llm-worker": LLMWorkerSettings,
    "memory": MemorySettings,
    "embedder": EmbedderSettings,
    "ui": UISettings,
    "assessor": AssessorSettings,
    "cli": CLISettings,
}
SET_BY_THE_STACK = {"redis_url", "data_dir", "consumer_name", "db_path", "memory_db_path", "host"}
"""Settings the compose file or the images fix (the same for every deployment)."""
PER_PROCESS = {"replica_name", "instance_name", "port"}
"""Names a process gives itself (host and pid) and the port inside the container: never
one value for every replica of a scaled service."""
NOT_IN_CONTAINERS = {"local_redis_port"}
"""`contreact up`'s own Redis: no meaning in the stack."""


def load(name: str) -> dict[str, Any]:
    data = yaml.safe_load((ROOT / name).read_text())
    assert isinstance(data, dict)
    return data


MAIN = load("docker-compose.yml")
SERVICES: dict[str, dict[str, Any]] = MAIN["services"]


@pytest.mark.parametrize("name", COMPOSE_FILES)
def test_compose_file_is_valid_against_the_compose_specification(name: str) -> None:
    errors = sorted(
        Draft201909Validator(SCHEMA).iter_errors(load(name)), key=lambda e: list(e.path)
    )
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors)


def test_the_schema_refuses_what_compose_would_refuse() -> None:
    """The validation has teeth: a misspelt key and a wrong type are errors."""
    validator = Draft201909Validator(SCHEMA)
    assert not validator.is_valid({"services": {"x": {"imgae": "redis"}}})
    assert not validator.is_valid({"services": {"x": {"image": "redis", "ports": "6379"}}})
    assert validator.is_valid({"services": {"x": {"image": "redis"}}})


def test_one_service_per_platform_service_besides_redis_ollama_and_the_cli() -> None:
    assert set(SERVICES) == {"redis", "ollama", "cli", *SERVICE_MODULES}
    for service in SERVICE_MODULES:
        assert (ROOT / "services" / service).is_dir()


def test_every_long_running_service_has_a_health_check_and_a_restart_policy() -> None:
    for name, service in SERVICES.items():
        if name == "cli":
            assert service["profiles"] == ["cli"], "the cli runs on demand, not with `up`"
            continue
        assert service.get("restart") == "unless-stopped", name
        test = service["healthcheck"]["test"]
        assert test[0] in ("CMD", "CMD-SHELL") and len(test) > 1, name
        if name in SERVICE_MODULES:
            assert test[-3:] == ["-m", "contreact_bus.health", name], name
            assert service["init"] is True, name


def test_dependencies_wait_for_health() -> None:
    for name, service in SERVICES.items():
        if name in ("redis", "ollama"):
            assert "depends_on" not in service
            continue
        depends = service["depends_on"]
        assert "redis" in depends, name
        assert {d["condition"] for d in depends.values()} == {"service_healthy"}, name
    assert "ollama" in SERVICES["llm-worker"]["depends_on"]


def test_ports_are_published_on_localhost_only() -> None:
    published = [(n, p) for n, s in SERVICES.items() for p in s.get("ports", [])]
    assert {n for n, _ in published} == {"redis", "ollama", "ui"}
    for name, port in published:
        assert str(port).startswith("127.0.0.1:"), (name, port)


def test_state_lives_in_named_volumes() -> None:
    assert set(MAIN["volumes"]) == {"redis-data", "ollama-models", "runs", "memory", "ui"}
    assert "redis-data:/data" in SERVICES["redis"]["volumes"]
    assert "--appendonly yes" in " ".join(SERVICES["redis"]["command"])
    assert "ollama-models:/root/.ollama" in SERVICES["ollama"]["volumes"]
    assert "runs:/data/runs" in SERVICES["orchestrator"]["volumes"]
    assert "memory:/data/memory" in SERVICES["memory"]["volumes"]
    assert "runs:/data/runs:ro" in SERVICES["cli"]["volumes"]
    assert "runs:/data/runs:ro" in SERVICES["embedder"]["volumes"]  # ended runs' corpora
    assert {"runs:/data/runs:ro", "ui:/data/ui"} <= set(SERVICES["ui"]["volumes"])
    assert any(v.endswith(":/configs:ro") for v in SERVICES["cli"]["volumes"])


def test_ollama_takes_its_limits_from_the_environment_and_no_gpu_unless_asked() -> None:
    env = SERVICES["ollama"]["environment"]
    for key in ("OLLAMA_NUM_PARALLEL", "OLLAMA_MAX_LOADED_MODELS", "OLLAMA_KEEP_ALIVE"):
        assert env[key].startswith(f"${{{key}:-"), key
    assert "deploy" not in SERVICES["ollama"]
    gpu = load("docker-compose.gpu.yml")["services"]["ollama"]["deploy"]
    (device,) = gpu["resources"]["reservations"]["devices"]
    assert device["capabilities"] == ["gpu"]


def stages(dockerfile: str) -> dict[str, str]:
    """The named stages of a Dockerfile: name -> its text (FROM line included)."""
    named = {}
    for part in re.split(r"^(?=FROM )", dockerfile, flags=re.M)[1:]:
        match = re.match(r"FROM \S+ AS (\S+)", part)
        if match:
            named[match.group(1)] = part
    return named


def chain(named: dict[str, str], target: str) -> str:
    """The text of every stage a target is built from (its FROM and COPY --from)."""
    seen: list[str] = []
    todo = [target]
    while todo:
        name = todo.pop()
        if name in seen or name not in named:
            continue
        seen.append(name)
        text = named[name]
        todo += re.findall(r"^FROM (\S+) AS", text, re.M) + re.findall(r"--from=(\S+)", text)
    return "".join(named[name] for name in seen)


def test_every_image_is_built_multi_stage_non_root_on_the_base_image_argument() -> None:
    assert (ROOT / ".dockerignore").is_file()
    for name in [*SERVICE_MODULES, "cli"]:
        build = SERVICES[name]["build"]
        assert build["context"] == "."
        assert build["args"]["BASE_IMAGE"] == "${BASE_IMAGE:-python:3.11-slim}", name
        assert build["target"] == name
        dockerfile = (ROOT / build["dockerfile"]).read_text()
        assert "ARG BASE_IMAGE=python:3.11-slim" in dockerfile, name
        assert chain(stages(dockerfile), name).count("FROM ") >= 3, name
        users = re.findall(r"^USER (\S+)", stages(dockerfile)[name], re.M)
        assert users and users[-1] not in ("root", "0"), name


def test_only_the_embedder_carries_torch_and_the_model() -> None:
    """One Dockerfile, a target per service: only the stages the embedder's target is
    built from install PyTorch or the embedder package; the analysis stack only the
    dashboard's and the CLI's."""
    for name in [*SERVICE_MODULES, "cli"]:
        dockerfile = (ROOT / SERVICES[name]["build"]["dockerfile"]).read_text()
        own = chain(stages(dockerfile), name)
        assert ("torch" in own) == (name == "embedder"), name
        assert ("services/embedder" in own) == (name == "embedder"), name
        assert ("libs/analysis" in own) == (name in ("ui", "cli")), name
    cli = (ROOT / "cli/pyproject.toml").read_text()
    core = cli.split("[project.optional-dependencies]")[0]
    assert "contreact-embedder" not in core and "contreact-llm-worker" not in core


def test_the_docker_test_builds_and_starts_every_service_offline() -> None:
    """A service added to the compose file is in the docker e2e test's stack too: its
    image built with the offline arguments (deploy/test/compose.yml), built and started
    by the test (tests/support/compose_stack.py), its wheels in the wheelhouse."""
    override = load("deploy/test/compose.yml")["services"]
    for name, service in SERVICES.items():
        if "build" in service:
            assert name in BUILT_SERVICES, name
            args = override[name]["build"]["args"]
            assert args["PIP_INSTALL_ARGS"] == "--no-index", name
            assert args["WHEELS_IMAGE"].startswith("${"), name
        if "profiles" not in service:
            assert name in STACK_SERVICES, name
    wheelhouse = (ROOT / "deploy/wheelhouse.sh").read_text()
    listed = re.search(r"^PACKAGES=\(([^)]*)\)", wheelhouse, re.M)
    assert listed is not None
    for package in [*(f"services/{name}" for name in SERVICE_MODULES), "cli"]:
        assert package in listed.group(1).split(), package
        assert re.search(rf"\./{package}( |$)", wheelhouse, re.M), package


def env_name(settings: type[BaseSettings], field: str) -> str:
    """The variable a setting is read from: its first alias when it has some (rq's
    Redis is ``CONTREACT_RQ_REDIS_URL`` for the assessor and the CLI alike), else the
    prefix and the field's name."""
    alias = settings.model_fields[field].validation_alias
    if isinstance(alias, AliasChoices) and isinstance(alias.choices[0], str):
        return alias.choices[0]
    prefix = str(settings.model_config.get("env_prefix", ""))
    return f"{prefix}{field}".upper()


def service_settings() -> list[tuple[str, str]]:
    return [
        (service, env_name(settings, field))
        for service, settings in SETTINGS.items()
        for field in settings.model_fields
        if field not in SET_BY_THE_STACK | NOT_IN_CONTAINERS | PER_PROCESS
    ]


@pytest.mark.parametrize(("service", "variable"), service_settings())
def test_every_setting_is_in_env_example_and_reaches_its_service(
    service: str, variable: str
) -> None:
    assert re.search(rf"^# {variable}=", (ROOT / ".env.example").read_text(), re.M), variable
    assert variable in SERVICES[service]["environment"], (service, variable)


def test_every_variable_the_compose_file_reads_is_in_env_example() -> None:
    text = (ROOT / "docker-compose.yml").read_text()
    example = (ROOT / ".env.example").read_text()
    variables = set(re.findall(r"\$\{([A-Z_]+)", text))
    assert variables
    missing = sorted(v for v in variables if not re.search(rf"^# {v}=", example, re.M))
    assert not missing


def test_the_redis_password_reaches_every_service_and_the_health_check() -> None:
    redis_service = SERVICES["redis"]
    assert redis_service["environment"]["REDIS_PASSWORD"] == "${REDIS_PASSWORD:-}"
    assert "--requirepass" in " ".join(redis_service["command"])
    assert "REDISCLI_AUTH" in " ".join(redis_service["healthcheck"]["test"])
    for name, service in SERVICES.items():
        if name in ("redis", "ollama"):
            continue
        assert service["environment"]["REDIS_URL"] == "redis://:${REDIS_PASSWORD:-}@redis:6379/0", (
            name
        )


def test_another_trees_fresh_images_are_kept() -> None:
    """Two clones testing on one engine: the one that builds second must not remove the
    images the first built minutes ago and has not started yet; a day-old tree's go."""
    from datetime import UTC, datetime

    from tests.support.compose_stack import stale_tags

    now = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
    listing = [
        "contreact-test/ui:mine|2026-11-20 09:00:00 +0000 UTC",
        "contreact-test/ui:other-clone|2026-11-29 11:50:00 +0000 UTC",
        "contreact-test/ui:last-week|2026-11-22 11:50:00 +0000 UTC",
        "contreact-test/ui:<none>|2026-11-01 11:50:00 +0000 UTC",
        "contreact-test/ui:unreadable|last Tuesday",
    ]
    assert stale_tags(listing, {"contreact-test/ui:mine"}, now) == ["contreact-test/ui:last-week"]
