"""The CLI's commands that talk to Redis (or read archives). Each returns an exit code."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import redis.asyncio as aioredis

from contreact_bus.archive import archived_run_ids
from contreact_bus.connection import connect
from contreact_bus.inbox import Inbox
from contreact_bus.replies import entries, text_map
from contreact_bus.run_log import RunLog
from contreact_bus.runs import heartbeats, list_runs, load_events
from contreact_cli.exceptions import CLIError, ServicesNotRunning
from contreact_cli.progress import Printer, ProgressPrinter
from contreact_cli.settings import CLISettings
from contreact_cli.text import safe
from contreact_events.catalog import TERMINAL_TYPES
from contreact_events.config import RunConfig
from contreact_events.export import export_records
from contreact_events.fold import fold_all
from contreact_events.names import (
    DEAD_LETTER_STREAM,
    run_digest_key,
    run_meta_key,
)
from contreact_events.replay import replay_check
from contreact_events.state import AgentState
from contreact_events.tasks import DIGEST_REQUEST, InboxMessage


def required_services(config: RunConfig | None) -> tuple[str, ...]:
    """The services a run needs (the embedder only when its diversity check is on)."""
    base = ("orchestrator", "llm-worker", "memory")
    return (*base, "embedder") if config is None or config.diversity.enabled else base


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
                f"{settings.resolved_redis_url()}: start them with `contreact up`"
            )
        await asyncio.sleep(0.2)


async def wait_until_up(settings: CLISettings, wait_s: float) -> None:
    """After `up`: wait for every service's heartbeat; a process that died on the way
    is named with the end of its log instead of waiting for nothing."""
    from contreact_cli.processes import processes

    async with redis_client(settings) as redis:
        deadline = time.monotonic() + wait_s
        while True:
            dead = [p for p in processes(settings) if not p.alive]
            if dead:
                tail = dead[0].log.read_text(errors="replace").strip().splitlines()[-1:]
                raise ServicesNotRunning(
                    f"{dead[0].name} exited at start ({' '.join(tail) or 'no output'}); "
                    f"its log: {dead[0].log}"
                )
            try:
                await wait_for_services(redis, settings, 0.0, required_services(None))
                return
            except ServicesNotRunning:
                if time.monotonic() > deadline:
                    raise
            await asyncio.sleep(0.25)


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
        if await RunLog(redis).exists(run_id) or run_id in archived_run_ids(settings.archive_dir):
            raise CLIError(
                f"run '{run_id}' already exists: set another run_id in the config or pass --run-id"
            )
        request = InboxMessage(
            run_id=run_id, kind="RunRequested", data={"config": config.model_dump(mode="json")}
        )
        await (await Inbox.open(redis)).send(request)
        if not follow:
            out(f"submitted run {run_id}; follow it with `contreact watch {run_id}`")
            return 0
        return await follow_run(redis, run_id, out)


async def watch_run(settings: CLISettings, run_id: str, out: Printer) -> int:
    async with redis_client(settings) as redis:
        if not await RunLog(redis).exists(run_id):
            events = await load_events(None, settings.archive_dir, run_id)
            printer = ProgressPrinter(out)
            for event in events:
                printer.show(event)
            return _exit_code(fold_all(events))
        return await follow_run(redis, run_id, out)


async def follow_run(redis: aioredis.Redis, run_id: str, out: Printer) -> int:
    """Print the run's progress until it ends. Ctrl-C stops following, not the run."""
    log = RunLog(redis)
    printer = ProgressPrinter(out)
    last: bytes | str = "0-0"
    state: AgentState | None = None
    interactive = sys.stdin.isatty()
    try:
        while True:
            for entry_id, event in await log.follow(run_id, last, block_ms=1000):
                last = entry_id
                state = fold_all([event], state)
                printer.show(event)
                if event.type == "OperatorMessageSent" and state.waiting_for is not None:
                    await _ask_operator(redis, state, out, interactive)
                if event.type == "RunFailed":
                    print(f"contreact: error: {safe(event.reason, one_line=True)}", file=sys.stderr)
                    return 1
                if event.type in TERMINAL_TYPES:
                    _print_next_steps(run_id, out)
                    return _exit_code(state)
    except (KeyboardInterrupt, asyncio.CancelledError):
        out(
            f"stopped following; run {run_id} goes on (`contreact watch {run_id}`, "
            f"`contreact cancel {run_id}`)"
        )
        return 130


async def _ask_operator(
    redis: aioredis.Redis, state: AgentState, out: Printer, interactive: bool
) -> None:
    head = state.waiting_for
    assert head is not None
    if not interactive:
        out(f'  the run waits for the operator: `contreact reply {state.run_id} "..."`')
        return
    text = await asyncio.to_thread(input, "  your reply> ")
    await _send_reply(redis, state.run_id, head.task_id, text)


async def _send_reply(redis: aioredis.Redis, run_id: str, task_id: str, text: str) -> None:
    reply = InboxMessage(
        run_id=run_id,
        kind="OperatorReplied",
        causation_id=task_id,
        data={"task_id": task_id, "text": text, "by": "operator"},
    )
    await (await Inbox.open(redis)).send(reply)


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
            return meta["digest"], "final state recorded by the orchestrator when the run ended"
        if not meta:
            return None, "the orchestrator holds no state for this run (archive only)"
        for _ in range(3):  # the run may move on between our read and its answer
            await redis.delete(run_digest_key(run_id))
            await (await Inbox.open(redis)).send(InboxMessage(run_id=run_id, kind=DIGEST_REQUEST))
            answer = await _poll_hash(redis, run_digest_key(run_id), 10.0)
            if answer is None:
                return None, "the orchestrator did not answer within 10 s (is it running?)"
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
    events, _state = await load_state(settings, run_id)
    return await asyncio.to_thread(write_export, events, out_dir / f"{run_id}.jsonl")


def write_export(events: list[Any], path: Path) -> tuple[Path, dict[str, int]]:
    """Write the LogRecords atomically; return the path and the count per record type."""
    path.parent.mkdir(parents=True, exist_ok=True)
    counts: dict[str, int] = {}
    tmp = path.with_suffix(".jsonl.tmp")
    with tmp.open("wb") as handle:
        for record in export_records(events):
            counts[record["event_type"]] = counts.get(record["event_type"], 0) + 1
            handle.write(orjson.dumps(record) + b"\n")
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
            redis, settings.archive_dir, run_ids, settings.data_dir / "memory.db", target
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
