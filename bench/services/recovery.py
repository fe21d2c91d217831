"""Recovery: time from a kill -9 of each service to its runs moving again.

`contreact up` (its supervisor, with the default settings) on a private Redis; four
scripted runs that write, read and reflect every cycle with the embedder's similarity
check on, 150 ms per LLM reply, long enough to outlast the benchmark. For each service
in turn, once the runs are moving: kill -9 its one process, then wait for the first
event that only that service can cause (any event for the orchestrator, an
``LLMResponded`` for the LLM worker, a ``ToolCallCompleted`` for the memory service,
a ``ReflectionEmbedded`` for the embedder) stamped after the kill, in every run (the
slowest run counts). Beside it, the time until the supervisor's new process beats.
The baseline is the normal gap between two such events of a run, measured just before.

    .venv/bin/python -m bench.services.recovery
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import redis
import yaml

from bench._support import (
    cli,
    header,
    ratio,
    redis_server,
    row,
    smoke_args,
    use_smoke_sizes,
    verdict,
)
from contreact_bus.local_redis import free_port
from contreact_bus.replies import entries
from contreact_events.names import SERVICES_HEARTBEAT, run_log_key
from contreact_events.wire.codec import event_from_fields
from contreact_events.wire.tasks import INPUT_EVENT_TYPES

RUNS = 4
VICTIMS = {
    "orchestrator": None,
    "llm-worker": "LLMResponded",
    "memory": "ToolCallCompleted",
    "embedder": "ReflectionEmbedded",
}
STRIDE_S = 15.0
"""How long the runs go before the first kill (every run in its stride)."""
SETTLE_S = 8.0
"""The pause between two victims."""
TARGET_ADDED_S = 5.0
"""What recovery may add to the time a new process needs to start (a dead child's
leases and tasks are handed on at once; the rest is the service's own start, e.g. the
embedder loading its model)."""


def run_config(run_id: str) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "model_name": "bench",
        "cycle_count": 10_000,
        "backend": "scripted",
        "diversity": {"enabled": True},
        "script": {
            "repeat": True,
            "replies": [
                {
                    "tool_calls": [
                        {"name": "write", "arguments": {"key": "k", "value": "cycle {cycle}"}}
                    ],
                    "latency_ms": 150,
                },
                {"tool_calls": [{"name": "read", "arguments": {"key": "k"}}], "latency_ms": 150},
                {"content": "Cycle {cycle}: another note kept and read.", "latency_ms": 150},
            ],
        },
    }


def events_of(client: redis.Redis, run_ids: list[str], count: int = 400) -> list[Any]:
    out = []
    for run_id in run_ids:
        newest = entries(client.xrevrange(run_log_key(run_id), count=count))
        out += [event_from_fields(fields, where=eid.decode()) for eid, fields in newest[::-1]]
    return out


def matches(event: Any, kind: str | None) -> bool:
    return event.type == kind if kind else event.type in INPUT_EVENT_TYPES


def normal_gap(client: redis.Redis, run_ids: list[str], kind: str | None) -> float:
    """Median gap between successive events of ``kind`` (any input: None) of a run."""
    gaps = []
    for run_id in run_ids:
        stamps = [e.ts for e in events_of(client, [run_id]) if matches(e, kind)]
        gaps += [(b - a).total_seconds() for a, b in itertools.pairwise(stamps)]
    return statistics.median(gaps[-60:]) if gaps else float("nan")


def every_run_moved(
    client: redis.Redis, run_ids: list[str], kind: str | None, after: datetime
) -> float | None:
    """Seconds from ``after`` until every run had an event of ``kind`` stamped later
    (None while one has not): how long the slowest run was held up."""
    waits = []
    for run_id in run_ids:
        later = [e.ts for e in events_of(client, [run_id], 40) if matches(e, kind) and e.ts > after]
        if not later:
            return None
        waits.append((min(later) - after).total_seconds())
    return float(max(waits))


def pid_of(data_dir: Path, name: str) -> int:
    status = json.loads((data_dir / "supervisor.json").read_text())
    (child,) = [c for c in status["children"] if c["name"] == name]
    return int(child["pid"])


def beating(client: redis.Redis, data_dir: Path, name: str, old_pid: int) -> bool:
    """The supervisor started a new process for ``name`` and it has beaten."""
    new_pid = pid_of(data_dir, name)
    if new_pid == old_pid:
        return False
    for raw in client.hvals(SERVICES_HEARTBEAT):
        beat = json.loads(raw)
        if isinstance(beat, dict) and beat.get("pid") == new_pid:
            return True
    return False


def main(argv: list[str] | None = None) -> None:
    args = smoke_args(argv, prog="python -m bench.services.recovery")
    header("recovery: kill -9 of each service -> its runs moving again")
    if args.smoke:  # one run, one victim that restarts quickly (no model to load)
        use_smoke_sizes(
            globals(), RUNS=1, VICTIMS={"llm-worker": "LLMResponded"}, STRIDE_S=2.0, SETTLE_S=0.0
        )
    results: dict[str, tuple[float, float]] = {}
    with redis_server() as url, tempfile.TemporaryDirectory(prefix="bench-recovery-") as tmp:
        data_dir = Path(tmp) / "data"
        env = {
            **os.environ,
            "REDIS_URL": url,
            "CONTREACT_DATA_DIR": str(data_dir),
            "CONTREACT_UI_PORT": str(free_port()),  # beside a stack that holds the default
        }
        client = redis.Redis.from_url(url)
        try:  # `up` inside: an interrupted start is still taken `down`
            cli(env, "up")
            run_ids = [f"recover-{n}" for n in range(RUNS)]
            for run_id in run_ids:
                path = Path(tmp) / f"{run_id}.yaml"
                path.write_text(yaml.safe_dump(run_config(run_id)))
                cli(env, "run", str(path), "--detach")
            time.sleep(STRIDE_S)
            for victim, kind in VICTIMS.items():
                results[victim] = kill_and_time(client, data_dir, run_ids, victim, kind)
                time.sleep(SETTLE_S)
        finally:
            client.close()
            cli(env, "down")
    added = {victim: moved - up for victim, (moved, up) in results.items()}
    worst = max(added, key=lambda v: added[v])
    verdict(
        "recovery",
        added[worst] <= TARGET_ADDED_S,
        f"beyond starting the new process, runs wait at most {added[worst]:.1f} s "
        f"({worst}; target <= {TARGET_ADDED_S:.0f} s); slowest in all "
        f"{max(m for m, _ in results.values()):.1f} s",
        value=added[worst],
        unit="s",
        target=f"<= {TARGET_ADDED_S:.0f} s",
    )


def kill_and_time(
    client: redis.Redis, data_dir: Path, run_ids: list[str], victim: str, kind: str | None
) -> tuple[float, float]:
    """(kill -> every run moving again, kill -> the new process beating), seconds."""
    gap = normal_gap(client, run_ids, kind)
    old = pid_of(data_dir, victim)
    killed_at, started = datetime.now(UTC), time.monotonic()
    os.kill(old, signal.SIGKILL)
    up_again = moved = None
    while (up_again is None or moved is None) and time.monotonic() < started + 180:
        time.sleep(0.1)
        if up_again is None and beating(client, data_dir, victim, old):
            up_again = time.monotonic() - started
        if moved is None:
            moved = every_run_moved(client, run_ids, kind, killed_at)
    if up_again is None or moved is None:
        raise SystemExit(f"bench: the runs did not recover within 180 s ({victim})")
    row(f"{victim}: kill -9 -> new process beating", up_again, "s")
    row(f"{victim}: kill -9 -> every run's next {kind or 'input'}", moved, "s")
    ratio(f"   against a run's normal gap ({gap * 1000:.0f} ms)", moved, gap)
    return moved, up_again


if __name__ == "__main__":
    main()
