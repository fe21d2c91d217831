"""The CLI's commands that talk to Redis (or read archives). Each returns an exit code."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis

from contreact_bus.archive import archived_run_ids
from contreact_bus.connection import connect
from contreact_bus.experiments import existing_runs
from contreact_bus.inbox import Inbox
from contreact_bus.redact import redact_url
from contreact_bus.replies import entries, text_map
from contreact_bus.run_log import RunLog
from contreact_bus.runs import heartbeats, list_runs, load_events
from contreact_cli.exceptions import CLIError, ServicesNotRunning
from contreact_cli.progress import Printer, ProgressPrinter
from contreact_cli.settings import CLISettings
from contreact_cli.text import safe
from contreact_events.catalog import TERMINAL_TYPES
from contreact_events.config import RunConfig
from contreact_events.core.export import export_records
from contreact_events.core.fold import fold_all
from contreact_events.core.replay import replay_check
from contreact_events.core.state import AgentState
from contreact_events.names import (
    DEAD_LETTER_STREAM,
    run_digest_key,
    run_meta_key,
)
from contreact_events.wire.codec import dumps
from contreact_events.wire.tasks import DIGEST_REQUEST, InboxMessage


def required_services(config: RunConfig | None) -> tuple[str, ...]:
    """The services a run needs: the embedder only when something of the config asks
    it (the diversity check, the paragraph guard, or the ``search_memory`` tool)."""
    base = ("orchestrator", "llm-worker", "memory")
    if config is None or config.diversity.enabled or config.tools.search_memory:
        return (*base, "embedder")
    return base


@asynccontextmanager
async def redis_client(settings: CLISettings) -> AsyncIterator[aioredis.Redis]:
    client = await connect(settings.resolved_redis_url())
    try:
        yield client
    finally:
        await client.aclose()


async def wait_for_services(
    redis: aioredis.Redis, settings: CLISettings, wait_s: float, needed: tuple[str, ...]
) -> None:
    """Return once every service kind has a fresh heartbeat; else say how to start them."""
    deadline = time.monotonic() + wait_s
    while True:
        beats = await heartbeats(redis)
        now = time.time()
        fresh = {
            name.split(":", 1)[0]
            for name, ts in beats.items()
            if now - ts < settings.heartbeat_fresh_s
        }
        missing = [s for s in needed if s not in fresh]
        if not missing:
            return
        if time.monotonic() > deadline:
            raise ServicesNotRunning(
                f"no running {', '.join(missing)} service(s) answer on "
                f"{redact_url(settings.resolved_redis_url())}: start them with `contreact up`"
            )
        await asyncio.sleep(0.2)


async def wait_until_up(settings: CLISettings, wait_s: float) -> list[str]:
    """After `up`: ready once the supervisor runs and every process it started is
    alive now and has beaten since it started (Redis: answers). A process that keeps
    dying is named with its last words instead of waiting for nothing. Returns a line
    per process."""
    from contreact_bus.runs import service_heartbeats
    from contreact_cli.processes import SUPERVISOR, processes, supervisor_pid

    deadline = time.monotonic() + wait_s
    redis: aioredis.Redis | None = None
    waiting_for = "the supervisor"
    try:
        while True:
            if supervisor_pid(settings) is None:
                raise ServicesNotRunning(
                    "the supervisor is not running: see "
                    f"{settings.data_dir / 'logs' / 'supervisor.log'}"
                )
            infos = [p for p in processes(settings) if p.name != SUPERVISOR]
            if redis is None and infos:
                redis = await optional_redis(settings)
            beats = await service_heartbeats(redis) if redis is not None else []
            ready, lines = [], []
            for info in infos:
                if info.kind == "redis":
                    ok = info.alive and redis is not None
                else:
                    ok = info.alive and any(
                        hb.pid == info.pid and hb.ts >= (info.started_at or 0) - 1 for hb in beats
                    )
                ready.append(ok)
                lines.append(f"{info.name}: running (pid {info.pid}, log {info.log})")
                if not ok and info.restarts >= 2:
                    raise ServicesNotRunning(
                        f"{info.name} keeps exiting at start ({info.last_exit}: "
                        f"{info.last_error or 'no output'}); its log: {info.log} "
                        "(`contreact down` stops trying)"
                    )
            if infos and all(ready):
                return lines
            waiting_for = ", ".join(i.name for i, ok in zip(infos, ready, strict=True) if not ok)
            if time.monotonic() > deadline:
                raise ServicesNotRunning(
                    f"not ready within {wait_s:.0f} s: {waiting_for or 'the supervisor'} "
                    f"(see `contreact status` and {settings.data_dir / 'logs'})"
                )
            await asyncio.sleep(0.25)
    finally:
        if redis is not None:
            await redis.aclose()


async def submit_run(
    settings: CLISettings,
    config: RunConfig,
    out: Printer,
    *,
    follow: bool = True,
    wait_s: float = 15.0,
) -> int:
    async with redis_client(settings) as redis:
        await wait_for_services(redis, settings, wait_s, required_services(config))
        run_id = config.run_id
        if await existing_runs(redis, settings.archive_dir, [run_id]):  # log, listing, archive
            raise CLIError(
                f"run '{run_id}' already exists: set another run_id in the config or pass --run-id"
            )
        request = InboxMessage(
            run_id=run_id, kind="RunRequested", data={"config": config.model_dump(mode="json")}
        )
        await (await Inbox.open(redis)).send(request)
        await _wait_for_decision(redis, run_id, request.msg_id, wait_s)
        if not follow:
            out(f"run {run_id} accepted; follow it with `contreact watch {run_id}`")
            return 0
        return await follow_run(redis, run_id, out, progress_every_s=settings.progress_every_s)


async def _wait_for_decision(
    redis: aioredis.Redis, run_id: str, msg_id: str, wait_s: float
) -> None:
    """Return once the orchestrator took this request as the run's first event;
    raise when it took another request for the same run id, or none in time."""
    deadline = time.monotonic() + max(wait_s, 5.0)
    while time.monotonic() < deadline:
        first = await RunLog(redis).follow(run_id, "0-0", block_ms=250)
        if first:
            event = first[0][1]
            if event.event_id == msg_id:
                return
            raise CLIError(
                f"run '{run_id}' already exists (another submission was taken first): "
                "set another run_id in the config or pass --run-id"
            )
    raise CLIError(
        f"the orchestrator did not take run '{run_id}' within {max(wait_s, 5.0):.0f} s: "
        "is it running (`contreact status`)? The request stays queued."
    )


async def watch_run(settings: CLISettings, run_id: str, out: Printer) -> int:
    async with redis_client(settings) as redis:
        if not await RunLog(redis).exists(run_id):
            events = await load_events(None, settings.archive_dir, run_id)
            printer = ProgressPrinter(out)
            for event in events:
                printer.show(event)
            return _exit_code(fold_all(events))
        return await follow_run(redis, run_id, out, progress_every_s=settings.progress_every_s)


PROGRESS_EVERY_S = 10.0
"""While a run waits on its model without news, a line this often says so."""


async def follow_run(
    redis: aioredis.Redis, run_id: str, out: Printer, *, progress_every_s: float = PROGRESS_EVERY_S
) -> int:
    """Print the run's progress until it ends. Ctrl-C stops following, not the run.

    A failed run's reason is printed once, on stderr. While the model check or a
    model call takes long, a line every ``progress_every_s`` says what is awaited.
    Interactive and asked by the agent, the ``your reply>`` prompt follows the run:
    a reply given elsewhere closes it with a note, and a line typed when no question
    waits is said not to be sent, never dropped silently."""
    log = RunLog(redis)
    printer = ProgressPrinter(out)
    last: bytes | str = "0-0"
    state: AgentState | None = None
    prompt = OperatorPrompt(redis, run_id, out) if sys.stdin.isatty() else None
    quiet_since = time.monotonic()
    reported = 0
    try:
        if prompt is not None:
            prompt.open()
        while True:
            if prompt is not None:
                await prompt.send_typed(state)
            block_ms = 250 if prompt is not None else 1000
            news = await log.follow(run_id, last, block_ms=block_ms)
            if not news and state is not None:
                waited = time.monotonic() - quiet_since
                if waited >= progress_every_s * (reported + 1):
                    reported += 1
                    line = waiting_line(state, waited)
                    if line:
                        out(line)
            for entry_id, event in news:
                last = entry_id
                quiet_since, reported = time.monotonic(), 0
                state = fold_all([event], state)
                if event.type == "RunFailed":
                    print(f"contreact: error: {safe(event.reason, one_line=True)}", file=sys.stderr)
                    return 1
                printer.show(event)
                if prompt is not None and event.type == "OperatorReplied":
                    prompt.answered(event.task_id, event.event_id, event.text)
                if event.type == "OperatorMessageSent" and state.waiting_for is not None:
                    if prompt is not None:
                        prompt.ask(state.waiting_for.task_id)
                    else:
                        out(f'  the run waits for the operator: `contreact reply {run_id} "..."`')
                if event.type in TERMINAL_TYPES:
                    _print_next_steps(run_id, out)
                    return _exit_code(state)
    except (KeyboardInterrupt, asyncio.CancelledError):
        out(
            f"stopped following; run {run_id} goes on (`contreact watch {run_id}`, "
            f"`contreact cancel {run_id}`)"
        )
        return 130
    finally:
        if prompt is not None:
            prompt.close()


def waiting_line(state: AgentState, waited_s: float) -> str | None:
    """What a run that has been quiet for ``waited_s`` waits on, if it is worth a line."""
    config = state.config
    if config is None:
        return None
    if state.phase == "checking":
        where = ""
        if config.backend in ("ollama", "auto"):
            host = config.ollama_client_config.host
            where = (
                f" at {safe(host, 80, one_line=True)} (connect timeout "
                f"{config.ollama_client_config.connect_timeout_s:g} s)"
            )
        return f"  still checking the model{where}: {waited_s:.0f} s"
    if state.phase == "awaiting_llm":
        where = f"cycle {state.cycle_number}, step {state.step}"
        return f"  the model is still answering ({where}): {waited_s:.0f} s"
    return None


class OperatorPrompt:
    """The ``your reply>`` prompt of a followed run, reading the terminal without
    blocking, so the follower keeps reading the run log while the operator types."""

    def __init__(self, redis: aioredis.Redis, run_id: str, out: Printer) -> None:
        self._redis = redis
        self._run_id = run_id
        self._out = out
        self._lines: asyncio.Queue[str] = asyncio.Queue()
        self._task_id: str | None = None
        """The question open now (its tool call's task id)."""
        self._sent: dict[str, str] = {}
        """task id -> id of the reply sent from here."""
        self._fd = sys.stdin.fileno()

    def open(self) -> None:
        asyncio.get_running_loop().add_reader(self._fd, self._readable)

    def close(self) -> None:
        asyncio.get_running_loop().remove_reader(self._fd)

    def _readable(self) -> None:
        line = sys.stdin.readline()
        if not line:  # end of input: nothing more will be typed
            self.close()
            return
        self._lines.put_nowait(line.rstrip("\n"))

    def ask(self, task_id: str) -> None:
        _discard_typeahead(self._fd)
        self._task_id = task_id
        print("  your reply> ", end="", flush=True)

    async def send_typed(self, state: AgentState | None) -> None:
        """Send a typed line as the reply to the open question; say so when none is open."""
        while not self._lines.empty():
            line = self._lines.get_nowait()
            task_id = self._task_id
            if task_id is None or state is None or state.waiting_for is None:
                self._out("  (no question is waiting: that line was not sent)")
                continue
            self._sent[task_id] = await _send_reply(self._redis, self._run_id, task_id, line)
            self._task_id = None

    def answered(self, task_id: str, reply_id: str, text: str) -> None:
        """The log has the reply to ``task_id``: close its question; if the reply came
        from elsewhere, say so (and that a reply sent from here was not used)."""
        if self._sent.get(task_id) == reply_id:
            return
        if self._task_id == task_id or task_id in self._sent:
            self._task_id = None
            unused = " (the reply typed here was not used)" if task_id in self._sent else ""
            self._out(f"\n  the question was answered elsewhere{unused}")


def _discard_typeahead(fd: int) -> None:
    """Lines typed before a question was asked are not its answer."""
    try:
        import termios

        termios.tcflush(fd, termios.TCIFLUSH)
    except (ImportError, OSError):
        pass


async def _send_reply(redis: aioredis.Redis, run_id: str, task_id: str, text: str) -> str:
    """Send the reply; return its message id (the event id it gets when taken)."""
    reply = InboxMessage(
        run_id=run_id,
        kind="OperatorReplied",
        causation_id=task_id,
        data={"task_id": task_id, "text": text, "by": "operator"},
    )
    await (await Inbox.open(redis)).send(reply)
    return reply.msg_id


def _print_next_steps(run_id: str, out: Printer) -> None:
    out(
        f"next: `contreact export {run_id}` (JSONL), `contreact rebuild {run_id}`, "
        f"`contreact replay {run_id} --check`"
    )


def _exit_code(state: AgentState | None) -> int:
    return 0 if state is not None and state.status == "completed" else 1


async def reply(settings: CLISettings, run_id: str, text: str, out: Printer) -> int:
    async with redis_client(settings) as redis:
        meta = await _meta(redis, run_id)
        task_id = meta.get("waiting_task", "")
        if not task_id:
            raise CLIError(
                f"run {run_id} is not waiting for the operator "
                f"(status: {meta.get('status', 'unknown')})"
            )
        after = await RunLog(redis).last_id(run_id)
        await _send_reply(redis, run_id, task_id, text)
        accepted = await _wait_for_event(redis, run_id, after, "OperatorReplied")
        out(
            "reply delivered"
            if accepted
            else "reply sent; the orchestrator has not taken it yet (is it running?)"
        )
        return 0 if accepted else 1


async def cancel(settings: CLISettings, run_id: str, reason: str, out: Printer) -> int:
    async with redis_client(settings) as redis:
        meta = await _meta(redis, run_id)
        if meta.get("status") in ("completed", "failed", "cancelled"):
            raise CLIError(f"run {run_id} has already ended ({meta['status']})")
        message = InboxMessage(run_id=run_id, kind="RunCancelled", data={"reason": reason})
        after = await RunLog(redis).last_id(run_id)
        await (await Inbox.open(redis)).send(message)
        accepted = await _wait_for_event(redis, run_id, after, "RunCancelled")
        out(
            f"run {run_id} cancelled"
            if accepted
            else "cancel sent; the orchestrator has not taken it yet (is it running?)"
        )
        return 0 if accepted else 1


async def _meta(redis: aioredis.Redis, run_id: str) -> dict[str, str]:
    meta = text_map(await redis.hgetall(run_meta_key(run_id)))
    if not meta:
        raise CLIError(f"no run '{run_id}' in Redis (see `contreact runs`)")
    return meta


async def _wait_for_event(
    redis: aioredis.Redis, run_id: str, after: bytes | str, event_type: str, timeout_s: float = 10.0
) -> bool:
    log = RunLog(redis)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for entry_id, event in await log.follow(run_id, after, block_ms=500):
            after = entry_id
            if event.type == event_type:
                return True
    return False


async def runs(settings: CLISettings) -> list[dict[str, str]]:
    async with redis_client(settings) as redis:
        rows = await list_runs(redis)
    known = {row["run_id"] for row in rows}
    for run_id in archived_run_ids(settings.archive_dir):
        if run_id not in known:
            rows.append({"run_id": run_id, "status": "archived"})
    return rows


async def load_state(settings: CLISettings, run_id: str) -> tuple[list[Any], AgentState]:
    redis = await optional_redis(settings)
    try:
        events = await load_events(redis, settings.archive_dir, run_id)
    finally:
        if redis is not None:
            await redis.aclose()
    return events, fold_all(events)


async def optional_redis(settings: CLISettings) -> aioredis.Redis | None:
    """Redis if it answers; the archive alone serves finished runs without it."""
    try:
        return await connect(settings.resolved_redis_url())
    except Exception:
        return None


@dataclass(frozen=True)
class RebuildReport:
    run_id: str
    events: int
    digest: str
    status: str
    cycles: int
    orchestrator_digest: str | None
    comparison: str

    @property
    def equal(self) -> bool | None:
        if self.orchestrator_digest is None:
            return None
        return self.orchestrator_digest == self.digest


async def rebuild(settings: CLISettings, run_id: str) -> RebuildReport:
    events, state = await load_state(settings, run_id)
    held, how = await _orchestrator_digest(settings, run_id, state.seq)
    return RebuildReport(
        run_id, len(events), state.digest(), state.status, state.cycle_number, held, how
    )


async def _orchestrator_digest(
    settings: CLISettings, run_id: str, seq: int
) -> tuple[str | None, str]:
    redis = await optional_redis(settings)
    if redis is None:
        return None, "Redis does not answer, so the orchestrator's state cannot be asked"
    try:
        meta = text_map(await redis.hgetall(run_meta_key(run_id)))
        if meta.get("digest"):
            if meta.get("digest_shape") != AgentState.shape():
                return None, (
                    "the orchestrator's final digest was made by code whose state has "
                    f"another shape ({meta.get('digest_shape') or 'not recorded'}, now "
                    f"{AgentState.shape()}): not comparable; `replay --check` still is"
                )
            return meta["digest"], "final state recorded by the orchestrator when the run ended"
        if not meta:
            return None, "the orchestrator holds no state for this run (archive only)"
        for _ in range(3):  # the run may move on between our read and its answer
            await redis.delete(run_digest_key(run_id))
            await (await Inbox.open(redis)).send(InboxMessage(run_id=run_id, kind=DIGEST_REQUEST))
            answer = await _poll_hash(redis, run_digest_key(run_id), 10.0)
            if answer is None:
                return None, "the orchestrator did not answer within 10 s (is it running?)"
            if answer.get("digest_shape") != AgentState.shape():
                return None, "the orchestrator runs code whose state has another shape"
            if int(answer["seq"]) == seq:
                return answer["digest"], f"live state held by the orchestrator ({answer['held']})"
            await asyncio.sleep(0.2)
        return None, "the run kept moving; try again when it waits or has ended"
    finally:
        await redis.aclose()


async def _poll_hash(redis: aioredis.Redis, key: str, timeout_s: float) -> dict[str, str] | None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        answer = text_map(await redis.hgetall(key))
        if answer:
            return answer
        await asyncio.sleep(0.05)
    return None


async def export(settings: CLISettings, run_id: str, out_dir: Path) -> tuple[Path, dict[str, int]]:
    check_out_dir(out_dir)
    events, _state = await load_state(settings, run_id)
    try:
        return await asyncio.to_thread(write_export, events, out_dir / f"{run_id}.jsonl")
    except OSError as exc:
        raise CLIError(
            f"cannot write the export into {out_dir} ({exc.strerror or exc}): "
            "choose another folder with --out"
        ) from None


def check_out_dir(out_dir: Path) -> None:
    """Refuse an output folder that is a file or cannot be written, before any work."""
    if out_dir.exists() and not out_dir.is_dir():
        raise CLIError(f"--out {out_dir} is a file, not a folder: name a folder")
    probe = out_dir
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK):
        raise CLIError(f"--out {out_dir}: {probe} is not a writable folder: choose another")


def write_export(events: list[Any], path: Path) -> tuple[Path, dict[str, int]]:
    """Write the LogRecords atomically; return the path and the count per record type."""
    path.parent.mkdir(parents=True, exist_ok=True)
    counts: dict[str, int] = {}
    tmp = path.with_suffix(".jsonl.tmp")
    with tmp.open("wb") as handle:
        for record in export_records(events):
            counts[record["event_type"]] = counts.get(record["event_type"], 0) + 1
            handle.write(dumps(record) + b"\n")
    tmp.replace(path)
    return path, counts


async def replay(settings: CLISettings, run_id: str) -> tuple[int, int, str | None]:
    events, _state = await load_state(settings, run_id)
    report = replay_check(events)
    divergence = report.divergence.describe() if report.divergence else None
    return report.events, report.inputs, divergence


async def memory_rebuild(
    settings: CLISettings, run_ids: list[str], target: Path | None
) -> dict[str, Any]:
    """Rebuild the memory store of these runs (every run when none is named) from
    their logs and compare it with the live store."""
    from contreact_memory.rebuild import rebuild_runs

    redis = await optional_redis(settings)
    try:
        if not run_ids:
            run_ids = [row["run_id"] for row in await runs(settings)]
        report = await rebuild_runs(
            redis, settings.archive_dir, run_ids, settings.memory_db, target
        )
    finally:
        if redis is not None:
            await redis.aclose()
    return {
        "run_ids": list(report.run_ids),
        "entries": report.entries,
        "identical": report.identical,
        "differences": list(report.differences),
        "output_mismatches": list(report.output_mismatches),
        "rebuilt_path": str(report.rebuilt_path) if report.rebuilt_path else None,
    }


async def dead_letters(settings: CLISettings, limit: int) -> list[dict[str, str]]:
    async with redis_client(settings) as redis:
        letters = entries(await redis.xrevrange(DEAD_LETTER_STREAM, count=limit))
    rows = []
    for entry_id, fields in letters:
        row = {k.decode(): v.decode(errors="replace") for k, v in fields.items()}
        row["id"] = entry_id.decode()
        rows.append(row)
    return rows


def what_ran(model: str, ran_model: str, backend: str | None) -> str:
    """``model (backend)``, saying so loudly when another model answered than the
    one configured (``auto`` falling back to the embedded model)."""
    shown = safe(model, 60, one_line=True)
    if ran_model and ran_model != model:
        shown = f"{safe(ran_model, 60, one_line=True)} INSTEAD OF {shown}"
    return f"{shown} ({backend or '?'})"


def show_state(state: AgentState, out: Printer, *, as_json: bool) -> None:
    if as_json:
        out(json.dumps(state.model_dump(mode="json"), indent=2))
        return
    config = state.config
    out(f"run {state.run_id}: {state.status} (phase {state.phase})")
    if config is not None:
        backend: str = state.backend or config.backend
        if backend != config.backend:
            backend = f"{backend}, configured {config.backend}"
        out(
            f"  model {what_ran(config.model_name, state.resolved_model, backend)}, "
            f"cycle {state.cycle_number}/{config.cycle_count}, "
            f"max {config.max_steps_per_cycle} steps per cycle, operator {config.operator.mode}"
        )
    if state.failure_reason:
        out(f"  reason: {safe(state.failure_reason, one_line=True)}")
    head = ("cycle", "tools", "mem ops", "to op", "resp chars", "write chars", "tokens", "llm s")
    if state.cycle_metrics:
        out("  " + "  ".join(f"{h:>11}" for h in head))
    for number, m in enumerate(state.cycle_metrics, start=1):
        cells = (
            number,
            m.tool_calls,
            m.memory_ops_total,
            m.messages_to_operator,
            m.response_chars,
            m.memory_write_chars,
            m.prompt_tokens + m.completion_tokens,
            f"{m.llm_seconds:.1f}",
        )
        out("  " + "  ".join(f"{c:>11}" for c in cells))
    for number, text in enumerate(state.reflection_history, start=1):
        out(f"  reflection {number}: {safe(text, 200, one_line=True) or '(empty)'}")
    if state.waiting_for is not None:
        out(f'  waiting for the operator: `contreact reply {state.run_id} "..."`')
