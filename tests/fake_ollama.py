"""A small Ollama stand-in on a real socket, for driving the real ``ollama`` client.

Speaks ``/api/chat`` (non-streaming) and ``/api/tags``. Each test sets which models
exist, queues chat answers or failures, and reads back the requests received.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DELAY = "_delay_s"
"""Key of a queued answer: seconds to wait before sending it (not sent to the client)."""


@dataclass
class Failure:
    """Answer with this HTTP status and body, or (``close``) drop the connection."""

    status: int = 500
    body: dict[str, Any] = field(default_factory=lambda: {"error": "internal error"})
    close: bool = False


@dataclass
class FakeOllama:
    host: str = ""
    models: list[str] = field(default_factory=list)
    queue: list[dict[str, Any] | Failure] = field(default_factory=list)
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def reply(
        self,
        content: str = "",
        tool_calls: list[tuple[str, dict[str, Any]]] = (),  # type: ignore[assignment]
        *,
        prompt_eval_count: int = 10,
        eval_count: int = 5,
        total_duration: int = 2_000_000_000,
        load_duration: int = 100_000_000,
        prompt_eval_duration: int = 300_000_000,
        eval_duration: int = 1_500_000_000,
        done_reason: str = "stop",
        delay_s: float = 0.0,
    ) -> None:
        """Queue an answer; ``delay_s`` holds the response back that long (a slow model)."""
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if tool_calls:
            message["tool_calls"] = [
                {"function": {"name": name, "arguments": args}} for name, args in tool_calls
            ]
        self.queue.append(
            {
                "message": message,
                "done": True,
                "done_reason": done_reason,
                "prompt_eval_count": prompt_eval_count,
                "eval_count": eval_count,
                "total_duration": total_duration,
                "load_duration": load_duration,
                "prompt_eval_duration": prompt_eval_duration,
                "eval_duration": eval_duration,
                DELAY: delay_s,
            }
        )

    def fail(self, status: int = 500, error: str = "boom", *, times: int = 1) -> None:
        self.queue.extend(Failure(status, {"error": error}) for _ in range(times))

    def drop_connection(self) -> None:
        self.queue.append(Failure(close=True))

    def chat_requests(self) -> list[dict[str, Any]]:
        return [body for path, body in self.requests if path == "/api/chat"]


def _handler(fake: FakeOllama) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def _send(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            with fake.lock:
                fake.requests.append((self.path, {}))
            if self.path == "/api/tags":
                models = [
                    {"name": m, "model": m, "digest": f"sha256:{i:064d}", "size": 1000}
                    for i, m in enumerate(fake.models)
                ]
                self._send(200, {"models": models})
            else:
                self._send(404, {"error": f"no route {self.path}"})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            with fake.lock:
                fake.requests.append((self.path, body))
                answer = fake.queue.pop(0) if fake.queue else None
            if self.path != "/api/chat":
                self._send(404, {"error": f"no route {self.path}"})
            elif answer is None:
                self._send(500, {"error": "fake ollama: no answer queued"})
            elif isinstance(answer, Failure):
                if answer.close:
                    self.close_connection = True
                    self.connection.close()
                    return
                self._send(answer.status, answer.body)
            elif body.get("model") not in fake.models and (
                f"{body.get('model')}:latest" not in fake.models
            ):
                self._send(404, {"error": f"model '{body.get('model')}' not found"})
            else:
                answer = dict(answer)
                time.sleep(float(answer.pop(DELAY, 0.0)))
                self._send(
                    200, {"model": body["model"], "created_at": "2025-01-01T00:00:00Z", **answer}
                )

    return Handler


@contextmanager
def running_fake_ollama(models: list[str] | None = None) -> Iterator[FakeOllama]:
    fake = FakeOllama(models=list(models or []))
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    fake.host = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@contextmanager
def dropping_host() -> Iterator[str]:
    """A host that never completes a TCP handshake, as one whose packets are dropped:
    a listening socket whose accept queue is full, so the kernel ignores new SYNs."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    port = server.getsockname()[1]
    fillers = []
    for _ in range(3):
        filler = socket.socket()
        filler.setblocking(False)
        with suppress(BlockingIOError):
            filler.connect(("127.0.0.1", port))
        fillers.append(filler)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        for filler in fillers:
            filler.close()
        server.close()


def closed_port_host() -> str:
    """An Ollama URL on a free local port where nothing listens."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    return f"http://127.0.0.1:{port}"
