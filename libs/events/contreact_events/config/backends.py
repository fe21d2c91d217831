"""How a run reaches its model: the backends' client settings, the model options sent
with every call, and the scripted backend's replies."""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field, StrictBool, StrictFloat, StrictInt, field_validator

from contreact_events.config.fields import (
    DEFAULT_OLLAMA_HOST,
    DEFAULT_OPENAI_BASE_URL,
    DEFAULT_OPENAI_KEY_ENV,
    ENV_NAME_PATTERN,
    Name,
    ReasoningEffort,
    Strict,
    Text,
)


class ModelOptions(Strict):
    """Generation options passed to the backend (Ollama's ``options``), all optional."""

    seed: StrictInt | None = None
    temperature: StrictFloat | None = Field(default=None, ge=0.0)
    top_p: StrictFloat | None = Field(default=None, gt=0.0, le=1.0)
    top_k: StrictInt | None = Field(default=None, ge=0)
    min_p: StrictFloat | None = Field(default=None, ge=0.0, le=1.0)
    num_predict: StrictInt | None = Field(default=None, ge=-2)
    repeat_last_n: StrictInt | None = Field(default=None, ge=-1)
    repeat_penalty: StrictFloat | None = Field(default=None, ge=0.0)
    presence_penalty: StrictFloat | None = None
    frequency_penalty: StrictFloat | None = None
    num_ctx: StrictInt | None = Field(default=None, gt=0)
    num_batch: StrictInt | None = Field(default=None, gt=0)
    num_thread: StrictInt | None = Field(default=None, gt=0)
    num_keep: StrictInt | None = None
    stop: tuple[Name, ...] | None = Field(default=None, max_length=32)
    reasoning_effort: ReasoningEffort | None = None
    """How hard a reasoning model thinks (OpenAI's ``reasoning_effort``, Ollama's ``think``)."""

    def as_options(self) -> dict[str, Any]:
        """The options that were set, in the shape Ollama's ``options`` takes."""
        return self.model_dump(mode="json", exclude_none=True)


class OllamaClientConfig(Strict):
    host: Name = DEFAULT_OLLAMA_HOST
    """The server's URL. No credentials: the config is recorded in the run log and
    its exports, so a ``user:password@`` in it is refused."""
    hosts: tuple[Name, ...] = Field(default=(), max_length=64)
    """A pool: any of these hosts may answer a call (the same model pulled on each).
    Empty: ``host`` alone."""
    timeout_s: StrictFloat | None = Field(default=600.0, gt=0)
    """Longest wait for one answer (a long generation included)."""
    connect_timeout_s: StrictFloat = Field(default=5.0, gt=0, le=600)
    """Longest wait to reach the server: a host that drops packets fails after this,
    not after ``timeout_s``."""

    @field_validator("host", "hosts")
    @classmethod
    def _urls(cls, value: str | tuple[str, ...]) -> str | tuple[str, ...]:
        for host in (value,) if isinstance(value, str) else value:
            if not host or any(c.isspace() or c in "{}" for c in host):
                raise ValueError(f"{host!r} is not a host (e.g. http://localhost:11434)")
        if isinstance(value, tuple) and len(set(value)) != len(value):
            raise ValueError("hosts must not repeat a host")
        return value

    @property
    def pool(self) -> tuple[str, ...]:
        """The hosts that may answer, in the order given."""
        return self.hosts or (self.host,)


class OpenAIClientConfig(Strict):
    """An OpenAI-compatible chat-completions server: OpenRouter, vLLM, llama.cpp's server.

    The key is never in the config: ``api_key_env`` names the environment variable
    the LLM worker reads it from (``null`` for a server without keys)."""

    base_url: Name = DEFAULT_OPENAI_BASE_URL
    base_urls: tuple[Name, ...] = Field(default=(), max_length=64)
    """A pool: any of these servers may answer a call (the same model served by each,
    e.g. vLLM on several GPU hosts). Empty: ``base_url`` alone."""
    api_key_env: Name | None = DEFAULT_OPENAI_KEY_ENV
    timeout_s: StrictFloat | None = Field(default=600.0, gt=0)
    connect_timeout_s: StrictFloat = Field(default=5.0, gt=0, le=600)
    """Longest wait to reach a server: the model check's, and in a pool (``base_urls``)
    every call's, so a silent server is passed over after this, not after ``timeout_s``."""

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str) -> str:
        return _http_url(value)

    @field_validator("base_urls")
    @classmethod
    def _urls(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        urls = tuple(_http_url(url) for url in value)
        if len(set(urls)) != len(urls):
            raise ValueError("base_urls must not repeat a URL")
        return urls

    @property
    def pool(self) -> tuple[str, ...]:
        """The servers that may answer, in the order given."""
        return self.base_urls or (self.base_url,)

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, value: str | None) -> str | None:
        if value is not None and not ENV_NAME_PATTERN.match(value):
            raise ValueError(
                "api_key_env must name an environment variable (letters, digits, '_'), "
                "never hold the key itself"
            )
        return value


def _http_url(value: str) -> str:
    """``value`` without a trailing ``/`` if it is an http(s) URL; else ValueError."""
    if not re.match(r"^https?://[^\s/{}]+[^\s{}]*$", value):
        raise ValueError(f"{value!r} is not an http(s) URL (e.g. {DEFAULT_OPENAI_BASE_URL})")
    return value.rstrip("/")


class ScriptedToolCall(Strict):
    name: Name
    arguments: dict[str, Any] = Field(default_factory=dict)


class ScriptedReply(Strict):
    """One reply of the scripted backend. ``{cycle}`` and ``{step}`` are substituted."""

    content: str = ""
    tool_calls: tuple[ScriptedToolCall, ...] = ()
    latency_ms: StrictFloat = Field(default=0.0, ge=0.0)
    error: Text | None = None
    """Fail this call instead of answering (``transient`` errors are retried)."""
    transient: StrictBool = False


class ScriptConfig(Strict):
    """Replies of the scripted backend, taken in order by the run's LLM call index."""

    replies: tuple[ScriptedReply, ...] = Field(min_length=1, max_length=100_000)
    repeat: StrictBool = False
    """Start again from the first reply when the script runs out (else the call fails)."""
    analysis_replies: tuple[ScriptedReply, ...] = Field(default=(), max_length=100_000)
    """Answers to operator-exchange analyses (``cognition.analysis: model``), by the
    exchange's cycle (wrapping). None given: the analysis call fails (and the
    heuristic stands in, with the reason)."""
