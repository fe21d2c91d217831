"""The supervisor `contreact up` leaves running: it starts every process of the plan
(the local Redis first, when there is one), restarts a process that dies (with
backoff: 0.5 s doubling to 30 s, back to 0.5 s once it has run a minute), and
writes what it sees to a status file for `contreact status` and `up`'s readiness
check. When an orchestrator child dies, its shard leases are released at once, so
its successor takes its shards without waiting for them to lapse. SIGTERM stops the
services, then Redis, then itself.

A service whose heartbeat stops (a loop stuck in one call: its process runs but serves
nobody) is treated as dead: after the plan's ``stall_s`` without a beat it is stopped
(SIGTERM, then SIGKILL: a loop stuck in C code runs no signal handler) and restarted.

Run as ``python -m contreact_cli.stack.supervisor PLAN`` (the plan is written by `up`).

``up`` is ready only when each process runs now and has beaten since it started; a
process that keeps dying is named with its last log line, and ``contreact status``
shows restarts and the last death (``stalled: no heartbeat for N s, ...`` for a stalled one).
A process that has not beaten yet (loading its model) or never beats (the dashboard) is
not judged.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from contreact_bus.failover.address import RedisAddress
from contreact_bus.local_redis import answers

log = logging.getLogger("contreact.supervisor")

FIRST_BACKOFF_S = 0.5
MAX_BACKOFF_S = 30.0
STABLE_AFTER_S = 60.0
"""A child that ran this long before dying starts again after the first backoff."""
STOP_TIMEOUT_S = 10.0
DEFAULT_STALL_S = 60.0
"""A service silent this long is stopped and restarted (services beat every 2 s)."""
BEATS_EVERY_S = 1.0
"""How often the supervisor reads the heartbeats."""


@dataclass
class ChildPlan:
    name: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    """Added to the supervisor's environment."""
    kind: str = "service"
    """``service``, ``orchestrator`` or ``redis``."""


@dataclass
class Plan:
    data_dir: str
    status_file: str
    log_dir: str
    redis_url: str
    children: list[ChildPlan]
    stall_s: float = DEFAULT_STALL_S
    """A child that beat and then stayed silent this long is stopped and restarted."""
    redis_sentinels: str = ""
    redis_master_name: str = ""

    @property
    def redis(self) -> RedisAddress:
        return RedisAddress.of(self.redis_url, self.redis_sentinels, self.redis_master_name)

    @classmethod
    def load(cls, path: Path) -> Plan:
        data = json.loads(path.read_text())
        data["children"] = [ChildPlan(**child) for child in data["children"]]
        return cls(**data)

    def save(self, path: Path) -> None:
        write_json(path, asdict(self))


@dataclass
class ChildStatus:
    name: str
    kind: str
    pid: int | None = None
    started_at: float | None = None
    restarts: int = 0
    state: str = "starting"
    """``running``, ``waiting`` (to be restarted), ``stopped``."""
    last_exit: str | None = None
    last_error: str | None = None
    log: str = ""


class Child:
    def __init__(self, plan: ChildPlan, log_dir: Path) -> None:
        self.plan = plan
        self.log_path = log_dir / f"{plan.name}.log"
        self.status = ChildStatus(plan.name, plan.kind, log=str(self.log_path))
        self.proc: subprocess.Popen[bytes] | None = None
        self._backoff = FIRST_BACKOFF_S
        self._next_start = 0.0
        self._stalled: str | None = None
        self._kill_at: float | None = None

    def start(self) -> None:
        env = {**os.environ, **self.plan.env}
        with self.log_path.open("ab") as out:
            self.proc = subprocess.Popen(
                self.plan.argv,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
            )
        self.status.pid = self.proc.pid
        self.status.started_at = time.time()
        self.status.state = "running"
        log.info("%s: started (pid %d)", self.plan.name, self.proc.pid)

    def poll(self) -> bool:
        """True if the child just died (recorded, and a restart scheduled)."""
        if self.proc is None or self.proc.poll() is None:
            return False
        code = self.proc.returncode
        ran = time.time() - (self.status.started_at or time.time())
        self.status.last_exit = f"signal {-code}" if code < 0 else f"exit {code}"
        self.status.last_error = self._stalled or last_line(self.log_path)
        self._stalled = self._kill_at = None
        self.status.state = "waiting"
        self.status.restarts += 1
        self._backoff = FIRST_BACKOFF_S if ran >= STABLE_AFTER_S else self._backoff
        self._next_start = time.monotonic() + self._backoff
        log.warning(
            "%s (pid %s) died after %.1f s (%s: %s); restarting in %.1f s",
            self.plan.name,
            self.status.pid,
            ran,
            self.status.last_exit,
            self.status.last_error,
            self._backoff,
        )
        self._backoff = min(self._backoff * 2, MAX_BACKOFF_S)
        self.proc = None
        return True

    def stop_stalled(self, silent_s: float) -> None:
        """Its heartbeat stopped ``silent_s`` ago: SIGTERM now, SIGKILL once
        ``STOP_TIMEOUT_S`` later it is still there. ``poll`` then restarts it."""
        if self.proc is None or self.proc.poll() is not None:
            return
        if self._kill_at is None:
            self._stalled = f"stalled: no heartbeat for {silent_s:.0f} s, stopped to restart"
            self._kill_at = time.monotonic() + STOP_TIMEOUT_S
            log.warning("%s (pid %d): %s", self.plan.name, self.proc.pid, self._stalled)
            self.proc.terminate()
        elif time.monotonic() >= self._kill_at:
            log.warning("%s (pid %d): still there, killed", self.plan.name, self.proc.pid)
            self.proc.kill()

    def due(self) -> bool:
        return self.proc is None and time.monotonic() >= self._next_start

    def terminate(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()

    def wait_stopped(self, deadline: float) -> None:
        if self.proc is None:
            return
        try:
            self.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.status.state = "stopped"


def last_line(path: Path, size: int = 4096) -> str:
    """The last non-empty line of a log (what a dying process said last)."""
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - size))
            tail = handle.read().decode(errors="replace")
    except OSError:
        return ""
    lines = [line.strip() for line in tail.splitlines() if line.strip()]
    return lines[-1][:500] if lines else ""


def write_json(path: Path, data: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    tmp.replace(path)


class Supervisor:
    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        log_dir = Path(plan.log_dir)
        self.children = [Child(child, log_dir) for child in plan.children]
        self.started = time.time()
        self._stop = asyncio.Event()
        self._redis: Any = None

    def write_status(self, state: str = "running") -> None:
        write_json(
            Path(self.plan.status_file),
            {
                "pid": os.getpid(),
                "started": self.started,
                "state": state,
                "redis_url": self.plan.redis_url,
                "children": [asdict(child.status) for child in self.children],
            },
        )

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._stop.set)
        redis_children = [c for c in self.children if c.plan.kind == "redis"]
        for child in redis_children:
            child.start()
            await self._wait_for_redis()
        self.write_status()
        last_write = last_beats = 0.0
        while not self._stop.is_set():
            changed = False
            if time.monotonic() - last_beats >= BEATS_EVERY_S:
                last_beats = time.monotonic()
                await self._stop_silent()
            for child in self.children:
                if child.poll():
                    changed = True
                    await self._release(child)
                if child.due() and not self._stop.is_set():
                    if await self._redis_missing(child, bool(redis_children)):
                        continue  # its Redis is coming back first
                    child.start()
                    changed = True
            if changed or time.monotonic() - last_write > 5:
                self.write_status()
                last_write = time.monotonic()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), timeout=0.2)
        self.stop_all()
        self.write_status("stopped")
        if self._redis is not None:
            with contextlib.suppress(Exception):
                await self._redis.aclose()

    async def _stop_silent(self) -> None:
        """Stop each child whose own heartbeat (its pid's, on this host, beaten since it
        started) is older than the plan's ``stall_s``. A child that has not beaten yet
        (loading its model) or beats nothing (the dashboard) is not judged."""
        from contreact_bus.connection import connect
        from contreact_bus.heartbeats import beat_of_process, service_heartbeats

        running = [c for c in self.children if c.proc is not None and c.plan.kind != "redis"]
        if not running:
            return
        try:
            if self._redis is None:
                self._redis = await connect(self.plan.redis)
            beats = await service_heartbeats(self._redis)
        except Exception as exc:  # Redis away: its children are not to blame
            log.debug("heartbeats unread: %s", exc)
            return
        host, now = socket.gethostname(), time.time()
        for child in running:
            assert child.proc is not None
            beat = beat_of_process(beats, child.proc.pid, host, child.status.started_at)
            if beat is not None and now - beat.ts > self.plan.stall_s:
                child.stop_stalled(now - beat.ts)

    async def _redis_missing(self, child: Child, local_redis: bool) -> bool:
        if child.plan.kind == "redis" or not local_redis:
            return False
        return not await asyncio.to_thread(answers, self.plan.redis)

    async def _wait_for_redis(self, timeout_s: float = 15.0) -> None:
        deadline = time.monotonic() + timeout_s
        while not await asyncio.to_thread(answers, self.plan.redis):
            if time.monotonic() > deadline:
                log.error("Redis does not answer at %s", self.plan.redis_url)
                return
            await asyncio.sleep(0.05)

    async def _release(self, child: Child) -> None:
        """What a dead child held goes at once, not when it would lapse: an
        orchestrator's shard leases, a worker's tasks in hand (marked stale, so a live
        worker reclaims them at its next pass). Only this process knows the child is
        dead (it reaped it), so nothing of a live process is taken."""
        pid = child.status.pid
        if pid is None or child.plan.kind == "redis":
            return
        from contreact_bus.connection import connect
        from contreact_bus.llm_routes import known_routes
        from contreact_bus.service import instance_name
        from contreact_bus.streams.consumer import release_consumer
        from contreact_events.names import (
            DEFAULT_INBOX_SHARDS,
            INBOX_SHARDS_KEY,
            LLM_GROUP,
            WORKER_GROUPS,
        )
        from contreact_orchestrator.leases import release_owner

        name = instance_name(pid)
        try:
            redis = await connect(self.plan.redis)
        except Exception as exc:
            log.warning("%s: could not release what pid %d held: %s", child.plan.name, pid, exc)
            return
        try:
            if child.plan.kind == "orchestrator":
                shards = int(await redis.get(INBOX_SHARDS_KEY) or DEFAULT_INBOX_SHARDS)
                await release_owner(redis, name, range(shards))
                log.info("%s: released the shard leases of pid %d", child.plan.name, pid)
                return
            groups = list(WORKER_GROUPS)
            groups += [(r.stream, LLM_GROUP) for r in (await known_routes(redis)).values()]
            freed = 0
            for stream, group in groups:
                freed += await release_consumer(redis, stream, group, name)
            if freed:
                log.info(
                    "%s: %d task(s) pid %d held go to a live worker", child.plan.name, freed, pid
                )
        except Exception as exc:
            log.warning("%s: could not release what pid %d held: %s", child.plan.name, pid, exc)
        finally:
            await redis.aclose()

    def stop_all(self) -> None:
        """Services first, then Redis, so nothing loses its connection mid-write."""
        for kinds in (("service", "orchestrator"), ("redis",)):
            group = [c for c in self.children if c.plan.kind in kinds]
            for child in group:
                child.terminate()
            deadline = time.monotonic() + STOP_TIMEOUT_S
            for child in group:
                child.wait_stopped(deadline)
                child.status.state = "stopped"


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        raise SystemExit("usage: python -m contreact_cli.stack.supervisor PLAN.json")
    plan = Plan.load(Path(args[0]))
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s supervisor: %(message)s"
    )
    asyncio.run(Supervisor(plan).run())


if __name__ == "__main__":
    main()
