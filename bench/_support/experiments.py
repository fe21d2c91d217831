"""Experiments for the benchmarks that start the services: the scripted model's
write-then-reflect cycle (``write_then_reflect``; the file itself:
``tests.support.experiment_files``), and the timing end to end: the experiment
submitted as `contreact experiment run --detach` submits it, and the wait until its
runs have ended (their statuses polled, the unfinished ones only, so the benchmark's
own process stays light)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis

from contreact_bus.experiments import run_statuses
from contreact_cli.commands.experiment import run_experiment
from contreact_cli.config_file import load_experiment
from contreact_cli.settings import CLISettings

ENDED = ("completed", "failed", "cancelled")


def write_then_reflect(latency_ms: int) -> dict[str, Any]:
    """A scripted model's cycle of two calls of ``latency_ms`` each: a memory write,
    then the reflection."""
    latency = {"latency_ms": latency_ms}
    write = {"name": "write", "arguments": {"key": "k", "value": "{cycle}"}}
    return {
        "repeat": True,
        "replies": [
            {**latency, "tool_calls": [write]},
            {**latency, "content": "Reflection of cycle {cycle}."},
        ],
    }


@dataclass(frozen=True)
class ExperimentTimes:
    started: float
    """``time.monotonic()`` when the submission began (to place other clocks' events)."""
    submitted_s: float
    """Seconds the submission took."""
    wall_s: float
    """Seconds from the submission's start until the last run ended."""
    ends_s: tuple[float, ...]
    """When each run ended, in seconds after the start, in order."""


async def wait_until_ended(
    client: aioredis.Redis,
    archive_dir: Path,
    run_ids: Iterable[str],
    *,
    poll_s: float = 0.05,
    timeout_s: float | None = None,
    each_poll: Callable[[], None] | None = None,
    since: float | None = None,
) -> list[float]:
    """Until every run of ``run_ids`` has ended: when each did, in order, in seconds
    after ``since`` (a ``time.monotonic()``; default: the call). The benchmark stops
    (``SystemExit``) naming the runs a poll finds ended otherwise than completed, or
    those still going after ``timeout_s``. ``each_poll`` is called after every poll (to
    sample something meanwhile)."""
    t0 = time.monotonic() if since is None else since
    going, ends = set(run_ids), []
    while going:
        await asyncio.sleep(poll_s)
        bad = {}
        for run_id, status in (await run_statuses(client, archive_dir, sorted(going))).items():
            if status in ENDED:
                going.discard(run_id)
                ends.append(time.monotonic() - t0)
                if status != "completed":
                    bad[run_id] = status
        if bad:
            raise SystemExit(f"bench: runs did not complete: {dict(list(bad.items())[:10])}")
        if timeout_s is not None and time.monotonic() - t0 > timeout_s:
            raise SystemExit(f"bench: runs still going after {timeout_s:.0f} s: {sorted(going)}")
        if each_poll is not None:
            each_poll()
    return sorted(ends)


async def timed_experiment(
    settings: CLISettings,
    client: aioredis.Redis,
    path: Path,
    *,
    poll_s: float = 0.05,
    each_poll: Callable[[], None] | None = None,
) -> ExperimentTimes:
    """Submit the experiment file ``path`` and wait until every run of it has ended
    (``wait_until_ended``); the benchmark stops if the submission fails."""
    run_ids = [run.config.run_id for run in load_experiment(path)[1]]
    started = time.monotonic()
    code = await run_experiment(settings, path, lambda _line: None, follow=False, wait_s=30)
    submitted = time.monotonic() - started
    if code != 0:
        raise SystemExit(f"bench: submitting {path.name} exited {code}")
    ends = await wait_until_ended(
        client, settings.archive_dir, run_ids, poll_s=poll_s, each_poll=each_poll, since=started
    )
    return ExperimentTimes(started, submitted, time.monotonic() - started, tuple(ends))
