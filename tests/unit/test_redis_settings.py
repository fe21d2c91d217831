"""The Redis fields every settings object shares (``contreact_bus.failover.settings``):
each reads the process's own variable first, then the one the deployment shares."""

from __future__ import annotations

import pytest
from pydantic_settings import BaseSettings

from contreact_assessor.settings import AssessorSettings
from contreact_bus.connection import DEFAULT_REDIS_URL
from contreact_bus.failover.address import DEFAULT_MASTER_NAME
from contreact_bus.failover.durability import DEFAULT_WAIT_TIMEOUT_MS, Durability
from contreact_bus.failover.settings import (
    SHARED_VARIABLES,
    DurableRedisSettings,
    RedisSettings,
)
from contreact_cli.settings import CLISettings
from contreact_embedder.settings import EmbedderSettings
from contreact_llm.settings import LLMWorkerSettings
from contreact_memory.settings import MemorySettings
from contreact_orchestrator.settings import OrchestratorSettings
from contreact_ui.settings import UISettings

SERVICES: list[type[RedisSettings]] = [
    OrchestratorSettings,
    LLMWorkerSettings,
    MemorySettings,
    EmbedderSettings,
    AssessorSettings,
    UISettings,
]
VALUES = {
    "redis_url": ("redis://shared:6379/0", "redis://own:6379/1"),
    "redis_sentinels": ("shared:26379", "own:26379"),
    "redis_master_name": ("shared", "own"),
    "wait_replicas": ("1", "2"),
    "wait_timeout_ms": ("100", "200"),
}


def cases() -> list[tuple[type[BaseSettings], str]]:
    every: list[type[BaseSettings]] = [*SERVICES, CLISettings]
    return [
        (settings, field)
        for settings in every
        for field in SHARED_VARIABLES
        if field in settings.model_fields
    ]


@pytest.mark.parametrize(("settings", "field"), cases())
def test_the_process_own_variable_comes_before_the_shared_one(
    monkeypatch: pytest.MonkeyPatch, settings: type[BaseSettings], field: str
) -> None:
    shared, own = VALUES[field]
    prefix = str(settings.model_config.get("env_prefix"))
    monkeypatch.setenv(SHARED_VARIABLES[field], shared)
    assert str(getattr(settings(), field)) == shared
    monkeypatch.setenv(f"{prefix}{field}".upper(), own)
    assert str(getattr(settings(), field)) == own
    monkeypatch.delenv(SHARED_VARIABLES[field])
    assert str(getattr(settings(), field)) == own


@pytest.mark.parametrize("settings", SERVICES)
def test_unset_the_services_use_the_local_redis(
    monkeypatch: pytest.MonkeyPatch, settings: type[RedisSettings]
) -> None:
    for field, shared in SHARED_VARIABLES.items():
        monkeypatch.delenv(shared, raising=False)
        prefix = str(settings.model_config.get("env_prefix"))
        monkeypatch.delenv(f"{prefix}{field}".upper(), raising=False)
    made = settings()
    address = made.redis
    assert (address.url, address.sentinels, address.master_name) == (
        DEFAULT_REDIS_URL,
        (),
        DEFAULT_MASTER_NAME,
    )
    if isinstance(made, DurableRedisSettings):
        assert made.durability == Durability(0, DEFAULT_WAIT_TIMEOUT_MS)


def test_a_keyword_sets_a_shared_field_by_its_name() -> None:
    made = AssessorSettings(redis_url="redis://given:6379/3", wait_replicas=1)
    assert made.redis.url == "redis://given:6379/3"
    assert made.durability.replicas == 1
    # The orchestrator's too (it took no field by name: wait_replicas=1 gave 0).
    assert OrchestratorSettings(wait_replicas=1).durability.replicas == 1
    assert LLMWorkerSettings(redis_master_name="given").redis.master_name == "given"
