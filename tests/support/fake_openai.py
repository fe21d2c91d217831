"""An OpenAI-compatible chat-completions stand-in on a real socket, for driving the
real ``openai`` client (as OpenRouter, vLLM or llama.cpp's server would answer).

Speaks ``GET /v1/models`` and ``POST /v1/chat/completions`` (non-streaming), with
bearer-key checks, tool calls, usage, and errors in the OpenAI error shape. Each
test sets the models, queues answers or failures, and reads back the requests
(headers included) and how many calls were in flight at once. A request for
structured output (``response_format``: ``json_schema`` with a ``name`` and a
``schema``, as the API takes it) is answered by ``structured`` when nothing is queued;
a ``response_format`` of another shape is refused with HTTP 400, as the API does.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.support.fake_ollama import JSONHandler, StandInServer


@dataclass
class Failure:
    """Answer with this HTTP status and OpenAI error body, or (``close``) hang up."""

    status: int = 500
    message: str = "internal error"
    kind: str = "server_error"
    close: bool = False


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    """Lower-case names."""
    body: dict[str, Any]


@dataclass
class FakeOpenAI:
    base_url: str = ""
    models: list[str] = field(default_factory=list)
    key: str | None = None
    """The bearer key the server requires (None: any or none)."""
    list_models: bool = True
    """False: ``/v1/models`` answers 404, as some servers do."""
    queue: list[dict[str, Any] | Failure] = field(default_factory=list)
    received: list[Received] = field(default_factory=list)
    latency_s: float = 0.0
    in_flight: int = 0
    max_in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    structured: Callable[[dict[str, Any]], Any] | None = None
    """The JSON answer to a request for structured output (its body in), when nothing
    is queued."""
    structured_first: bool = False
    """True: a request for structured output is answered by ``structured`` even when
    answers are queued (they are the other calls'), so runs whose analyses interleave
    with the agent's calls get each its own."""
    structured_cost: float | None = None
    """The provider's cost (OpenRouter's ``usage.cost``) of each structured answer."""

    def reply(
        self,
        content: str | None = "",
        tool_calls: list[tuple[str, dict[str, Any] | str]] = (),  # type: ignore[assignment]
        *,
        prompt_tokens: int = 11,
        completion_tokens: int = 7,
        finish_reason: str = "stop",
        model: str | None = None,
        reasoning: str | None = None,
        cost: float | None = None,
    ) -> None:
        """Queue an answer; a tool call's arguments may be raw text (unreadable JSON)."""
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if tool_calls:
            message["tool_calls"] = [
                {
                    "id": f"srv_{n}",
                    "type": "function",
                    "function": {
                        "name": name,
                        "arguments": args if isinstance(args, str) else json.dumps(args),
                    },
                }
                for n, (name, args) in enumerate(tool_calls)
            ]
            finish_reason = "tool_calls"
        if reasoning is not None:
            message["reasoning"] = reasoning
        self.queue.append(
            {
                "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "total_tokens": prompt_tokens + completion_tokens,
                    **({"cost": cost} if cost is not None else {}),
                },
            }
        )

    def fail(self, status: int = 500, message: str = "boom", *, times: int = 1) -> None:
        kind = {400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit"}
        self.queue.extend(
            Failure(status, message, kind.get(status, "server_error")) for _ in range(times)
        )

    def drop_connection(self) -> None:
        self.queue.append(Failure(close=True))

    def chat_requests(self) -> list[dict[str, Any]]:
        return [r.body for r in self.received if r.path.endswith("/chat/completions")]


def response_format_problem(body: dict[str, Any]) -> str | None:
    """Why a request's ``response_format`` is not one the API takes, or None."""
    shape = body.get("response_format")
    if shape is None:
        return None
    if not isinstance(shape, dict) or shape.get("type") not in (
        "text",
        "json_object",
        "json_schema",
    ):
        return "Invalid value for 'response_format.type'"
    if shape["type"] != "json_schema":
        return None
    spec = shape.get("json_schema")
    if not isinstance(spec, dict) or not isinstance(spec.get("schema", {}), dict):
        return "Missing required parameter: 'response_format.json_schema'"
    if not re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", str(spec.get("name", ""))):
        return "Invalid 'response_format.json_schema.name': letters, digits, '_' and '-'"
    return None


def structured_answer(data: Any, cost: float | None = None) -> dict[str, Any]:
    """A completion whose content is ``data`` as JSON (structured output), with the
    provider's ``cost`` when given."""
    message = {"role": "assistant", "content": json.dumps(data)}
    usage: dict[str, Any] = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
    return {
        "model": None,
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": usage | ({"cost": cost} if cost is not None else {}),
    }


def _handler(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(JSONHandler):
        def _error(self, status: int, message: str, kind: str) -> None:
            self._send(status, {"error": {"message": message, "type": kind, "code": None}})

        def _authorized(self) -> bool:
            if fake.key is None:
                return True
            if self.headers.get("Authorization") == f"Bearer {fake.key}":
                return True
            self._error(401, "Incorrect API key provided.", "authentication_error")
            return False

        def _record(self, body: dict[str, Any]) -> None:
            with fake.lock:
                headers = {k.lower(): v for k, v in self.headers.items()}
                fake.received.append(Received(self.path, headers, body))

        def do_GET(self) -> None:
            self._record({})
            if not self._authorized():
                return
            if self.path.rstrip("/").endswith("/v1/models") and fake.list_models:
                data = [{"id": m, "object": "model", "owned_by": "fake"} for m in fake.models]
                self._send(200, {"object": "list", "data": data})
            else:
                self._error(404, f"no route {self.path}", "not_found")

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            self._record(body)
            if not self.path.endswith("/v1/chat/completions"):
                self._error(404, f"no route {self.path}", "not_found")
                return
            if not self._authorized():
                return
            problem = response_format_problem(body)
            if problem is not None:
                self._error(400, problem, "invalid_request_error")
                return
            response_format = body.get("response_format") or {}
            structured = response_format.get("type") == "json_schema" and fake.structured
            with fake.lock:
                skip = structured and fake.structured_first
                answer = fake.queue.pop(0) if fake.queue and not skip else None
                fake.in_flight += 1
            if answer is None and structured and fake.structured:
                answer = structured_answer(fake.structured(body), fake.structured_cost)
                fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
            try:
                if fake.latency_s:
                    time.sleep(fake.latency_s)
                self._answer(body, answer)
            finally:
                with fake.lock:
                    fake.in_flight -= 1

        def _answer(self, body: dict[str, Any], answer: dict[str, Any] | Failure | None) -> None:
            if isinstance(answer, Failure):
                if answer.close:
                    self.close_connection = True
                    self.connection.close()
                else:
                    self._error(answer.status, answer.message, answer.kind)
            elif body.get("model") not in fake.models:
                self._error(404, f"The model `{body.get('model')}` does not exist", "not_found")
            elif answer is None:
                self._error(500, "fake openai: no answer queued", "server_error")
            else:
                self._send(
                    200,
                    {
                        "id": "chatcmpl-fake",
                        "object": "chat.completion",
                        "created": 1_700_000_000,
                        **answer,
                        "model": answer["model"] or body["model"],
                    },
                )

    return Handler


@contextmanager
def running_fake_openai(
    models: list[str] | None = None, *, key: str | None = None
) -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI(models=list(models or []), key=key)
    server = StandInServer(("127.0.0.1", 0), _handler(fake))
    fake.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
