"""A run driven through a real orchestrator in this process (real Redis, its real
append path), the test answering its tasks as the workers would: for the traces'
tests and benchmark (issue 33), where what is measured or checked is what the
orchestrator does around its appends."""

from __future__ import annotations

import contextlib
import http.server
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis

from contreact_bus.streams.inbox import Inbox
from contreact_bus.traces import RunTraces
from contreact_events.core.outbox import pending_tasks
from contreact_events.core.state import AgentState
from contreact_events.wire.tasks import InboxMessage, LLMTask, MemoryTask
from contreact_orchestrator.leases import ShardLeases
from contreact_orchestrator.orchestrator import Orchestrator
from tests.support.sim import apply_memory, make_config, say


def agent(task: LLMTask) -> dict[str, Any]:
    """Two tool calls (a write and a list), then the reflection: two LLM steps and two
    tool steps a cycle."""
    if task.step == 1:
        message = say("", ("write", {"key": f"k{task.cycle}", "value": "a note"}), ("list", {}))
    else:
        message = say(f"Cycle {task.cycle}: I wrote a note and listed my keys.")
    return message.model_dump(mode="json")


async def orchestrator_with(
    redis: aioredis.Redis, archive_dir: Path, traces: RunTraces | None, owner: str
) -> Orchestrator:
    orchestrator = Orchestrator(redis, archive_dir, "1", Inbox(redis, 1), traces=traces)
    lease = await ShardLeases(redis, owner, 600.0).acquire(0)
    assert lease is not None, "the shard's lease is held by another owner"
    await orchestrator.take_shard(lease)
    return orchestrator


async def drive_run(
    orchestrator: Orchestrator, run_id: str, cycles: int, *, stop_after: int | None = None
) -> int:
    """Request the run (unless it is held already) and answer each task it waits on
    until it ends or ``stop_after`` inputs were handled; the number of inputs handled
    (each one a step: fold, decide, append, send)."""
    steps = 0
    if run_id not in orchestrator._states:
        config = make_config(run_id=run_id, cycle_count=cycles)
        request = {"config": config.model_dump(mode="json")}
        await orchestrator.handle(InboxMessage(run_id=run_id, kind="RunRequested", data=request))
        steps += 1
    memory: dict[str, str] = {}
    while stop_after is None or steps < stop_after:
        state: AgentState | None = orchestrator._states.get(run_id)
        if state is None:  # finished: archived and forgotten
            return steps
        (task,) = [t for t in pending_tasks(state) if t.task_id == state.pending_task_id]
        await orchestrator.handle(_answer(task, memory))
        steps += 1
    return steps


def _answer(task: Any, memory: dict[str, str]) -> InboxMessage:
    def reply(kind: str, **data: Any) -> InboxMessage:
        return InboxMessage(run_id=task.run_id, kind=kind, causation_id=task.task_id, data=data)

    if isinstance(task, MemoryTask):
        output = apply_memory(memory, task.tool, task.arguments)
        return reply(
            "ToolCallCompleted", task_id=task.task_id, tool_name=task.tool, output=output, ok=True
        )
    assert isinstance(task, LLMTask), task
    if task.kind == "check":
        return reply("ModelChecked", ok=True, backend="scripted", model=task.model)
    usage = {"prompt_tokens": 100, "completion_tokens": 20, "done_reason": "stop"}
    return reply("LLMResponded", message=agent(task), usage=usage, model=task.model)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def otlp_sink() -> Iterator[tuple[str, list[bytes]]]:
    """A bare OTLP/HTTP receiver in a thread: takes every POST to /v1/traces with 200
    and keeps the bodies (protobuf ``ExportTraceServiceRequest``s)."""
    bodies: list[bytes] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            bodies.append(self.rfile.read(int(self.headers["Content-Length"])))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", bodies
    finally:
        server.shutdown()
        server.server_close()


def otlp_sink_process() -> tuple[subprocess.Popen[bytes], str]:
    """The same receiver as a separate process (for the benchmark)."""
    port = free_port()
    code = (
        "import http.server\n"
        "class H(http.server.BaseHTTPRequestHandler):\n"
        "    def do_POST(self):\n"
        "        self.rfile.read(int(self.headers['Content-Length']))\n"
        "        self.send_response(200); self.send_header('Content-Length', '0')\n"
        "        self.end_headers()\n"
        "    def log_message(self, *a): pass\n"
        f"http.server.ThreadingHTTPServer(('127.0.0.1', {port}), H).serve_forever()\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code])
    deadline = time.monotonic() + 60  # only guards a hang
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
            return proc, f"http://127.0.0.1:{port}"
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError("the OTLP sink did not start")
