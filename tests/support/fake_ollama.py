"""A small Ollama stand-in on a real socket, for driving the real ``ollama`` client.

Speaks ``/api/chat`` (non-streaming), ``/api/tags``, ``/api/version`` and ``/api/pull``
(streamed progress, as Ollama sends it). Each test sets which models exist and which
can be pulled, queues chat answers or failures, and reads back the requests received.

With ``auto_reply`` it answers chat requests by itself when nothing is queued, as a
model that writes a note and then reflects would (``auto_answer``). A request that asks
for structured output (``format``: ``"json"`` or a JSON schema, as Ollama takes it)
is answered by ``structured`` (the JSON object for a request's body) when nothing is
queued; a ``format`` of another shape is refused with HTTP 400, as Ollama does. Run as a program
(``python fake_ollama.py --port 11434 --pullable NAME ...``) it is the stand-in the
docker e2e test runs as a container in place of Ollama. It uses the standard library
only, so that container needs nothing else.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
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
    pullable: dict[str, int] = field(default_factory=dict)
    """Models ``/api/pull`` can fetch (name with tag -> size in bytes)."""
    pull_chunks: int = 4
    """Progress lines per pulled layer."""
    auto_reply: bool = False
    """Answer chat requests with ``auto_answer`` when no answer is queued."""
    latency_s: float = 0.0
    """Seconds each chat answer takes."""
    structured: Callable[[dict[str, Any]], Any] | None = None
    """The JSON answer to a request for structured output (its body in: the messages
    and the ``format`` schema), when nothing is queued."""
    respond: Callable[[dict[str, Any]], str] | None = None
    """The text answer to any other chat request (its body in), when nothing is queued."""
    answer_with: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    """The whole answer (``message`` with tool calls, counts) to a chat request that
    asks for no structured output, when nothing is queued (``respond`` gives text only)."""

    def has_model(self, name: str) -> bool:
        return name in self.models or tagged(name) in self.models

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
        thinking: str | None = None,
    ) -> None:
        """Queue an answer; ``delay_s`` holds the response back that long (a slow model);
        ``thinking``: the model's reasoning, apart from the answer (``message.thinking``)."""
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if thinking is not None:
            message["thinking"] = thinking
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


def format_problem(body: dict[str, Any]) -> str | None:
    """Why a request's ``format`` is not one Ollama takes (``"json"``, or a JSON schema
    object), or None."""
    shape = body.get("format")
    if shape in (None, "", "json"):
        return None
    if isinstance(shape, dict) and isinstance(shape.get("type", "object"), str | list):
        return None
    return f"invalid format: {json.dumps(shape)[:80]}"


def structured_answer(body: dict[str, Any], data: Any) -> dict[str, Any]:
    """A chat answer whose content is ``data`` as JSON (structured output)."""
    return text_answer(body, json.dumps(data))


def text_answer(body: dict[str, Any], content: str) -> dict[str, Any]:
    """A chat answer of ``content``, with figures in Ollama's shape."""
    return {
        "message": {"role": "assistant", "content": content},
        "done": True,
        "done_reason": "stop",
        "prompt_eval_count": 10 * len(body.get("messages") or []),
        "eval_count": 9,
        "total_duration": 1_000_000,
        "load_duration": 0,
        "prompt_eval_duration": 500_000,
        "eval_duration": 500_000,
    }


def tagged(name: str) -> str:
    """A model name with its tag, as Ollama lists it (``llama3`` -> ``llama3:latest``)."""
    return name if ":" in name else f"{name}:latest"


def pull_progress(name: str, size: int, chunks: int) -> list[dict[str, Any]]:
    """The lines Ollama streams for a pull: manifest, one layer in chunks, then done."""
    digest = f"sha256:{hashlib.sha256(name.encode()).hexdigest()}"
    lines: list[dict[str, Any]] = [{"status": "pulling manifest"}]
    for step in range(1, chunks + 1):
        lines.append(
            {
                "status": f"pulling {digest[7:19]}",
                "digest": digest,
                "total": size,
                "completed": size * step // chunks,
            }
        )
    lines += [
        {"status": "verifying sha256 digest"},
        {"status": "writing manifest"},
        {"status": "success"},
    ]
    return lines


def auto_answer(body: dict[str, Any]) -> dict[str, Any]:
    """A deterministic answer to a chat request: after a user turn, write a note with
    the memory tool; after a tool result, reflect (no tool call), ending the cycle."""
    messages = body.get("messages") or []
    model = str(body.get("model", "model"))
    cycle = sum(1 for m in messages if m.get("role") == "user")
    last = messages[-1].get("role") if messages else "user"
    if last == "tool":
        message: dict[str, Any] = {
            "role": "assistant",
            "content": (
                f"Cycle {cycle}, {model}: I kept note {cycle} in memory. Topic {cycle * 7 % 13} "
                f"of thirteen comes next, and I will look at it from angle {cycle % 5}."
            ),
        }
    else:
        message = {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "function": {
                        "name": "write",
                        "arguments": {"key": f"note-{cycle}", "value": f"{model}, cycle {cycle}"},
                    }
                }
            ],
        }
    return {
        "message": message,
        "done": True,
        "done_reason": "stop",
        "prompt_eval_count": 10 * len(messages),
        "eval_count": 20,
        "total_duration": 1_000_000,
        "load_duration": 0,
        "prompt_eval_duration": 500_000,
        "eval_duration": 500_000,
    }


class StandInServer(ThreadingHTTPServer):
    """The stand-ins' HTTP server: a thread per request, and a real server's listen
    backlog (socketserver's 5 dropped connections when hundreds of calls connect at
    once, and their clients waited a second to try again)."""

    request_queue_size = 1024


class JSONHandler(BaseHTTPRequestHandler):
    """A quiet handler that answers JSON (the stand-ins' common part; this file also
    runs alone in the stand-in's image, so it lives here)."""

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _handler(fake: FakeOllama) -> type[BaseHTTPRequestHandler]:
    class Handler(JSONHandler):
        def do_GET(self) -> None:
            with fake.lock:
                fake.requests.append((self.path, {}))
            if self.path == "/api/version":
                self._send(200, {"version": "0.0.0-stand-in"})
            elif self.path == "/api/tags":
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
            if self.path == "/api/pull":
                with fake.lock:
                    fake.requests.append((self.path, body))
                self._pull(body)
                return
            if self.path == "/api/chat" and (problem := format_problem(body)) is not None:
                with fake.lock:
                    fake.requests.append((self.path, body))
                self._send(400, {"error": problem})
                return
            with fake.lock:
                fake.requests.append((self.path, body))
                answer = fake.queue.pop(0) if fake.queue else None
            asks_schema = isinstance(body.get("format"), dict)
            if answer is None and asks_schema and fake.structured is not None:
                answer = structured_answer(body, fake.structured(body))
            elif answer is None and not asks_schema and fake.answer_with is not None:
                answer = fake.answer_with(body)
            elif answer is None and not asks_schema and fake.respond is not None:
                answer = text_answer(body, fake.respond(body))
            if answer is None and fake.auto_reply and self.path == "/api/chat":
                answer = auto_answer(body)
            if fake.latency_s and self.path == "/api/chat":
                time.sleep(fake.latency_s)
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
            elif not fake.has_model(str(body.get("model"))):
                self._send(404, {"error": f"model '{body.get('model')}' not found"})
            else:
                answer = dict(answer)
                time.sleep(float(answer.pop(DELAY, 0.0)))
                self._send(
                    200, {"model": body["model"], "created_at": "2025-01-01T00:00:00Z", **answer}
                )

        def _pull(self, body: dict[str, Any]) -> None:
            name = tagged(str(body.get("model") or body.get("name") or ""))
            size = fake.pullable.get(name)
            lines = (
                [{"error": "pull model manifest: file does not exist"}]
                if size is None
                else pull_progress(name, size, fake.pull_chunks)
            )
            if size is not None:
                with fake.lock:
                    if name not in fake.models:
                        fake.models.append(name)
            if body.get("stream") is False:  # one answer: the last line
                self._send(500 if size is None else 200, lines[-1])
                return
            # Streamed as Ollama does: HTTP 200, one JSON object per line, an error too
            # (HTTP/1.0 here, so the body ends when the connection closes).
            self.send_response(200)
            self.send_header("Content-Type", "application/x-ndjson")
            self.end_headers()
            for line in lines:
                self.wfile.write(json.dumps(line).encode() + b"\n")
                self.wfile.flush()
            self.close_connection = True

    return Handler


def serve(fake: FakeOllama, host: str = "127.0.0.1", port: int = 0) -> StandInServer:
    """A server for ``fake`` bound to ``host:port`` (0: a free port); sets ``fake.host``."""
    server = StandInServer((host, port), _handler(fake))
    server.daemon_threads = True
    fake.host = f"http://{host}:{server.server_address[1]}"
    return server


@contextmanager
def running_fake_ollama(
    models: list[str] | None = None, pullable: dict[str, int] | None = None
) -> Iterator[FakeOllama]:
    fake = FakeOllama(models=list(models or []), pullable=dict(pullable or {}))
    server = serve(fake)
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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="An Ollama stand-in that answers by itself.")
    parser.add_argument("--bind", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=11434)
    parser.add_argument("--model", action="append", default=[], help="present at start")
    parser.add_argument(
        "--pullable", action="append", default=[], help="NAME[=BYTES]: /api/pull can fetch it"
    )
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per chat answer")
    args = parser.parse_args(argv)
    pullable = {}
    for item in args.pullable:
        name, _, size = item.partition("=")
        pullable[tagged(name)] = int(size or 1_000_000)
    fake = FakeOllama(
        models=[tagged(m) for m in args.model],
        pullable=pullable,
        auto_reply=True,
        latency_s=args.latency,
    )
    server = serve(fake, args.bind, args.port)
    print(f"Ollama stand-in listening on {fake.host}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
