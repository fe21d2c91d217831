"""Redis memory per active and per finished run, before and after the log retention.

`contreact up` on a private Redis (with the orchestrator's log retention set to a few
seconds), RUNS scripted runs of CYCLES cycles that write, read and reflect, with the
embedder's similarity check on (each cycle's 384-float vector lives in the log). The
figures come from ``MEMORY USAGE`` of each run's own keys, the task and inbox streams
and the dead letters, and from ``used_memory`` against the idle platform's (the
baseline, measured in the same run): while the runs are active; when they have
finished (logs archived, still in Redis); after the retention (only the listing
hash and index entry stay). Task streams are shown after the consumers' housekeeping
has trimmed what is acked.

    .venv/bin/python -m bench.services.redis_memory [--runs 10] [--cycles 10]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import redis
import yaml

from bench._support import add_smoke_flag, cli, header, redis_server, row, use_smoke_sizes, verdict
from contreact_bus.local_redis import free_port
from contreact_events.names import (
    DEAD_LETTER_STREAM,
    DEFAULT_INBOX_SHARDS,
    WORKER_GROUPS,
    inbox_stream,
    run_digest_key,
    run_log_key,
    run_meta_key,
    run_writer_key,
)

RETENTION_S = 30
SETTLE_S = 2.0
"""Idle time after `up`, before the idle dataset is measured."""


def run_config(run_id: str, cycles: int) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "model_name": "bench",
        "cycle_count": cycles,
        "backend": "scripted",
        "diversity": {"enabled": True},
        "script": {
            "repeat": True,
            "replies": [
                {
                    "tool_calls": [
                        {
                            "name": "write",
                            "arguments": {"key": "note-{cycle}", "value": "thoughts " * 40},
                        }
                    ],
                    "latency_ms": 100,
                },
                {"tool_calls": [{"name": "list", "arguments": {}}], "latency_ms": 100},
                {"content": "Cycle {cycle}: " + "a reflection of some length. " * 30},
            ],
        },
    }


def usage(client: redis.Redis, key: str) -> int:
    return int(client.memory_usage(key, samples=0) or 0)


def run_keys(client: redis.Redis, run_id: str) -> int:
    keys = (run_log_key, run_meta_key, run_writer_key, run_digest_key)
    return sum(usage(client, key(run_id)) for key in keys)


def streams(client: redis.Redis) -> tuple[int, int]:
    """(bytes, entries) of every task stream, inbox shard and the dead letters."""
    names = [s for s, _ in WORKER_GROUPS] + [inbox_stream(i) for i in range(DEFAULT_INBOX_SHARDS)]
    names.append(DEAD_LETTER_STREAM)
    return (
        sum(usage(client, n) for n in names),
        sum(int(client.xlen(n)) for n in names if client.exists(n)),
    )


def used(client: redis.Redis) -> int:
    """``used_memory_dataset``: the data, without the connections' buffers and the
    allocator's overhead, which do not belong to any run."""
    return int(client.info("memory")["used_memory_dataset"])


def statuses(client: redis.Redis, run_ids: list[str]) -> list[Any]:
    return [client.hget(run_meta_key(r), "status") for r in run_ids]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.services.redis_memory")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--cycles", type=int, default=10)
    add_smoke_flag(parser)
    args = parser.parse_args(argv)
    header("Redis memory per active and finished run, before and after retention")
    if args.smoke:
        use_smoke_sizes(globals(), RETENTION_S=1, SETTLE_S=0.2)
        args.runs, args.cycles = 2, 2
    with redis_server() as url, tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        env = {
            **os.environ,
            "REDIS_URL": url,
            "CONTREACT_DATA_DIR": str(Path(tmp) / "data"),
            "CONTREACT_UI_PORT": str(free_port()),  # beside a stack that holds the default
            "CONTREACT_ORCH_LOG_RETENTION_S": str(RETENTION_S),
        }
        client = redis.Redis.from_url(url)
        try:  # `up` inside: an interrupted start is still taken `down`
            cli(env, "up")
            time.sleep(SETTLE_S)
            idle = used(client)
            run_ids = [f"mem-{n}" for n in range(args.runs)]
            for run_id in run_ids:
                path = Path(tmp) / f"{run_id}.yaml"
                path.write_text(yaml.safe_dump(run_config(run_id, args.cycles)))
                cli(env, "run", str(path), "--detach")
            while sum(int(client.hget(run_meta_key(r), "cycle") or 0) for r in run_ids) < (
                args.runs * args.cycles // 2
            ):
                time.sleep(0.2)
            active = [run_keys(client, r) for r in run_ids]
            active_streams, active_entries = streams(client)
            active_used = used(client) - idle
            while any(s not in (b"completed", b"failed") for s in statuses(client, run_ids)):
                time.sleep(0.5)
            finished = [run_keys(client, r) for r in run_ids]
            finished_used = used(client) - idle
            time.sleep(RETENTION_S + 1)  # (also past the consumers' 30 s housekeeping)
            retained = [run_keys(client, r) for r in run_ids]
            retained_used = used(client) - idle
            kept_streams, kept_entries = streams(client)
            largest = sorted((usage(client, k), k.decode()) for k in client.scan_iter())[-6:]
        finally:
            client.close()
            cli(env, "down")
    per = args.runs
    print(
        f"   {args.runs} runs x {args.cycles} cycles (write, list, reflection; vectors in the log)"
    )
    row("active, mid-run: run's own keys, mean", sum(active) / per / 1024, "KiB/run")
    row("active: task + inbox streams, per active run", active_streams / per / 1024, "KiB/run",
        f"({active_entries} entries)")  # fmt: skip
    row("active: dataset over idle, per run", active_used / per / 1024, "KiB/run")
    row("finished, log kept: run's own keys, mean", sum(finished) / per / 1024, "KiB/run")
    row("finished: dataset over idle, per run", finished_used / per / 1024, "KiB/run")
    row("after retention: run's own keys, mean", sum(retained) / per / 1024, "KiB/run")
    row("after retention: dataset over idle, per run", retained_used / per / 1024, "KiB/run")
    row("streams after housekeeping", kept_streams / 1024, "KiB", f"({kept_entries} entries)")
    print(
        "   largest keys after retention: "
        + ", ".join(f"{k} {b / 1024:.1f} KiB" for b, k in largest[::-1])
    )
    shrink = sum(retained) / sum(finished) if sum(finished) else 0.0
    verdict(
        "retention",
        shrink < 0.05 and kept_entries < active_entries,
        f"a finished run keeps {shrink:.1%} of its keys' memory after retention "
        f"(target < 5%); streams hold {kept_entries} entries after housekeeping",
        value=shrink * 100,
        unit="%",
        target="< 5%",
    )


if __name__ == "__main__":
    main()
