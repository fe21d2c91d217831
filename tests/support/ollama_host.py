"""An Ollama host stand-in that schedules like Ollama: on a real socket, speaking
``/api/chat``, ``/api/tags`` and ``/api/ps`` to the real ``ollama`` client.

What it models of Ollama's scheduler (``server/sched.go``): requests wait in one
queue taken in order. A request for a loaded model goes to that model's runner,
which serves ``num_parallel`` at once (``OLLAMA_NUM_PARALLEL``). A request for a
model that is not loaded loads it when fewer than ``max_loaded`` are
(``OLLAMA_MAX_LOADED_MODELS``), which takes ``load_s``; otherwise the least recently
used model is unloaded, an idle one if there is one, else a busy one once its
requests are done, and the queue waits meanwhile (head-of-line blocking: a swap
holds up requests for models that are loaded).

It answers every chat with a reflection (no tool calls) after the model's
latency, unless given ``answer`` (the assistant message for a request's body) and
``request_latency_s`` (a request's own latency), and records what a test or benchmark
needs: requests in flight at once, loads, and each call's start and end (and whether
it asked for a JSON ``format``, as an exchange's analysis does).
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.support.fake_ollama import JSONHandler, StandInServer


@dataclass
class _Runner:
    model: str
    ready_at: float
    refs: int = 0
    """Requests assigned to it and not finished."""
    active: int = 0
    last_used: float = 0.0
    expiring: bool = False


@dataclass
class _Request:
    model: str
    runner: _Runner | None = None


@dataclass(frozen=True)
class Call:
    model: str
    start: float
    end: float
    structured: bool = False
    """The request gave a JSON ``format`` (an analysis of an operator exchange)."""


@dataclass
class OllamaHost:
    models: list[str]
    num_parallel: int = 1
    max_loaded: int = 3
    load_s: float = 0.0
    latency_s: Callable[[str], float] = lambda _model: 0.0
    answer: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    """The assistant message for a request's body (None: a numbered reflection)."""
    request_latency_s: Callable[[dict[str, Any]], float] | None = None
    """A request's latency from its body (None: ``latency_s`` of its model)."""
    host: str = ""
    calls: list[Call] = field(default_factory=list)
    loads: list[tuple[float, str]] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    max_loaded_seen: int = 0
    _pending: deque[_Request] = field(default_factory=deque)
    _runners: dict[str, _Runner] = field(default_factory=dict)
    _cond: threading.Condition = field(default_factory=threading.Condition)
    _stopped: bool = False

    # --- the scheduler thread ------------------------------------------------------

    def schedule(self) -> None:
        with self._cond:
            while not self._stopped:
                if not self._pending:
                    self._cond.wait()
                    continue
                request = self._pending[0]
                runner = self._runners.get(request.model)
                if runner is not None and not runner.expiring:
                    self._assign(request, runner)
                elif runner is not None:  # unloading: wait until it is gone
                    self._cond.wait(0.05)
                elif len(self._runners) < self.max_loaded:
                    now = time.monotonic()
                    runner = _Runner(request.model, ready_at=now + self.load_s, last_used=now)
                    self._runners[request.model] = runner
                    self.loads.append((now, request.model))
                    self.max_loaded_seen = max(self.max_loaded_seen, len(self._runners))
                    self._assign(request, runner)
                else:
                    self._unload_one()

    def _assign(self, request: _Request, runner: _Runner) -> None:
        self._pending.popleft()
        runner.refs += 1
        request.runner = runner
        self._cond.notify_all()

    def _unload_one(self) -> None:
        """Expire the least recently used runner (an idle one first) and wait until it
        has no requests left, then drop it. The queue waits meanwhile."""
        runners = sorted(self._runners.values(), key=lambda r: (r.refs > 0, r.last_used))
        victim = runners[0]
        victim.expiring = True
        while victim.refs > 0 and not self._stopped:
            self._cond.wait(0.05)
        self._runners.pop(victim.model, None)
        self._cond.notify_all()

    # --- a request's thread -------------------------------------------------------

    def serve_chat(
        self, model: str, latency_s: float | None = None, structured: bool = False
    ) -> None:
        request = _Request(model)
        with self._cond:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self._pending.append(request)
            self._cond.notify_all()
            while request.runner is None and not self._stopped:
                self._cond.wait()
            runner = request.runner
            assert runner is not None
            while not self._stopped:
                wait = runner.ready_at - time.monotonic()
                if wait <= 0 and runner.active < self.num_parallel:
                    break
                self._cond.wait(max(wait, 0.0) or None)
            runner.active += 1
        start = time.monotonic()
        time.sleep(self.latency_s(model) if latency_s is None else latency_s)
        end = time.monotonic()
        with self._cond:
            runner.active -= 1
            runner.refs -= 1
            runner.last_used = end
            self.in_flight -= 1
            self.calls.append(Call(model, start, end, structured))
            self._cond.notify_all()

    def loaded(self) -> list[str]:
        with self._cond:
            return [r.model for r in self._runners.values() if not r.expiring]

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()


def _handler(host: OllamaHost) -> type[BaseHTTPRequestHandler]:
    class Handler(JSONHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            if self.path == "/api/tags":
                models = [
                    {"name": m, "model": m, "digest": f"sha256:{i:064d}", "size": 1}
                    for i, m in enumerate(host.models)
                ]
                self._send(200, {"models": models})
            elif self.path == "/api/ps":
                self._send(200, {"models": [{"name": m, "model": m} for m in host.loaded()]})
            else:
                self._send(404, {"error": f"no route {self.path}"})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            model = str(body.get("model", ""))
            if self.path != "/api/chat":
                self._send(404, {"error": f"no route {self.path}"})
                return
            if model not in host.models:
                self._send(404, {"error": f"model '{model}' not found"})
                return
            latency = None if host.request_latency_s is None else host.request_latency_s(body)
            host.serve_chat(model, latency, structured=body.get("format") is not None)
            if host.answer is not None:
                message = host.answer(body)
            else:
                turns = sum(1 for m in body.get("messages", []) if m.get("role") == "user")
                message = {"role": "assistant", "content": f"Reflection {turns}."}
            self._send(
                200,
                {
                    "model": model,
                    "created_at": "2026-01-01T00:00:00Z",
                    "message": message,
                    "done": True,
                    "done_reason": "stop",
                    "prompt_eval_count": 10,
                    "eval_count": 3,
                },
            )

    return Handler


@contextmanager
def running_ollama_host(models: list[str], **settings: Any) -> Iterator[OllamaHost]:
    host = OllamaHost(models=list(models), **settings)
    server = StandInServer(("127.0.0.1", 0), _handler(host))
    server.daemon_threads = True
    host.host = f"http://127.0.0.1:{server.server_address[1]}"
    threads = [
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True),
        threading.Thread(target=host.schedule, daemon=True),
    ]
    for thread in threads:
        thread.start()
    try:
        yield host
    finally:
        host.stop()
        server.shutdown()
        server.server_close()
        for thread in threads:
            thread.join(timeout=5)
