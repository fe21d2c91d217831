"""A replicated Redis with Sentinel on loopback, for the tests and benchmarks: one
primary, its replicas and three sentinels, each a process of Debian's ``redis-server``
(a sentinel is ``redis-sentinel``, which is ``redis-server --sentinel``: the same
binary, so the package ``redis-sentinel`` is used when installed and not needed
otherwise), on free ports, keeping nothing."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

from contreact_bus.exceptions import RedisUnavailable
from contreact_bus.failover.address import RedisAddress
from contreact_bus.local_redis import free_port, redis_server_argv, wait_until_answers

DOWN_AFTER_MS = 1000
"""A primary silent this long is down for a sentinel (Sentinel's default is 30 s)."""


@dataclass
class SentinelGroup:
    workdir: Path
    master_name: str
    servers: dict[int, subprocess.Popen[Any]] = field(default_factory=dict)
    """Data servers (primary and replicas) by port."""
    sentinels: dict[int, subprocess.Popen[Any]] = field(default_factory=dict)
    password: str | None = None
    """Every server's and sentinel's ``requirepass`` (None: none)."""

    @property
    def sentinels_setting(self) -> str:
        """``REDIS_SENTINELS`` for this group."""
        return ",".join(f"127.0.0.1:{port}" for port in self.sentinels)

    def address(self, db: int = 0) -> RedisAddress:
        return RedisAddress(self.url(0, db), self.sentinel_pairs(), self.master_name)

    def sentinel_pairs(self) -> tuple[tuple[str, int], ...]:
        return tuple(("127.0.0.1", port) for port in self.sentinels)

    def env(self, db: int = 0) -> dict[str, str]:
        """The environment every service and the CLI reach the group with. REDIS_URL
        names the primary of the start (the supervisor of `contreact up` checks it once);
        its host is not used through the sentinels."""
        return {
            "REDIS_URL": self.url(self.primary_port(), db),
            "REDIS_SENTINELS": self.sentinels_setting,
            "REDIS_MASTER_NAME": self.master_name,
        }

    def primary_port(self) -> int:
        """The primary's port as a sentinel that answers names it."""
        for port in self.sentinels:
            client = redis.Redis(
                port=port, socket_timeout=2, decode_responses=True, password=self.password
            )
            try:
                found: Any = client.sentinel_get_master_addr_by_name(self.master_name)
            except redis.RedisError:
                continue
            finally:
                client.close()
            if found:
                return int(found[1])
        raise RedisUnavailable(f"no sentinel of {self.sentinels_setting} names a primary")

    def url(self, port: int | None = None, db: int = 0) -> str:
        """A server's URL (the primary's when ``port`` is None; with port 0, a URL of
        the credentials and database alone, for an address through the sentinels)."""
        if port is None:
            port = self.primary_port()
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}127.0.0.1{f':{port}' if port else ''}/{db}"

    def kill_primary(self) -> int:
        """SIGKILL the primary (no goodbye to its replicas); returns its port."""
        port = self.primary_port()
        proc = self.servers[port]
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        return port

    def wait_for_new_primary(self, old: int, timeout_s: float = 60.0) -> int:
        """The port of the replica the sentinels promoted, once it takes writes."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with contextlib.suppress(RedisUnavailable, redis.RedisError, OSError):
                port = self.primary_port()
                if port != old:
                    client = redis.Redis(port=port, socket_timeout=2, password=self.password)
                    try:
                        if client.role()[0] in (b"master", "master"):
                            return port
                    finally:
                        client.close()
            time.sleep(0.05)
        raise RedisUnavailable(f"no replica was promoted within {timeout_s} s")

    def stop(self) -> None:
        for proc in [*self.sentinels.values(), *self.servers.values()]:
            if proc.poll() is None:
                proc.terminate()
        for proc in [*self.sentinels.values(), *self.servers.values()]:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def sentinel_argv(config: Path) -> list[str]:
    binary = shutil.which("redis-sentinel")
    if binary is not None:
        return [binary, str(config)]
    server = redis_server_argv(0, config.parent, appendonly=False)[0]
    return [server, str(config), "--sentinel"]


def _start(argv: list[str], log: Path) -> subprocess.Popen[Any]:
    with log.open("ab") as out:
        return subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )


@contextlib.contextmanager
def running_sentinel_group(
    workdir: Path,
    *,
    replicas: int = 1,
    sentinels: int = 3,
    master_name: str = "contreact",
    down_after_ms: int = DOWN_AFTER_MS,
    password: str | None = None,
) -> Iterator[SentinelGroup]:
    """A primary, ``replicas`` replicas in sync with it, and ``sentinels`` sentinels
    (quorum: a majority) that all see the replicas and each other; with ``password``,
    the servers' and the sentinels' (a word without spaces)."""
    group = SentinelGroup(workdir, master_name, password=password)
    auth = ["--requirepass", password, "--masterauth", password] if password else []
    try:
        primary = free_port()
        for port in [primary, *(free_port() for _ in range(replicas))]:
            folder = workdir / f"redis-{port}"
            folder.mkdir(parents=True)
            argv = redis_server_argv(port, folder, appendonly=False)
            argv += ["--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0", *auth]
            if port != primary:
                argv += ["--replicaof", "127.0.0.1", str(primary)]
            group.servers[port] = _start(argv, folder / "log")
            wait_until_answers(group.url(port))
        _wait_in_sync(primary, replicas, password)
        quorum = sentinels // 2 + 1
        for _ in range(sentinels):
            port = free_port()
            folder = workdir / f"sentinel-{port}"
            folder.mkdir(parents=True)
            config = folder / "sentinel.conf"
            config.write_text(
                f"port {port}\nbind 127.0.0.1\ndir {folder}\n"
                f"sentinel monitor {master_name} 127.0.0.1 {primary} {quorum}\n"
                f"sentinel down-after-milliseconds {master_name} {down_after_ms}\n"
                f"sentinel failover-timeout {master_name} {max(4 * down_after_ms, 3000)}\n"
                f"sentinel parallel-syncs {master_name} {max(replicas, 1)}\n"
                + (f"requirepass {password}\nsentinel auth-pass {master_name} {password}\n"
                   if password else "")
            )  # fmt: skip
            group.sentinels[port] = _start(sentinel_argv(config), folder / "log")
            wait_until_answers(group.url(port).removesuffix("/0"))
        _wait_discovered(group, replicas, sentinels)
        yield group
    finally:
        group.stop()


def _wait_in_sync(
    primary: int, replicas: int, password: str | None, timeout_s: float = 30.0
) -> None:
    client = redis.Redis(port=primary, socket_timeout=2, password=password)
    deadline = time.monotonic() + timeout_s
    try:
        while int(client.info("replication").get("connected_slaves", 0)) < replicas:
            if time.monotonic() > deadline:
                raise RedisUnavailable(f"{replicas} replica(s) did not sync within {timeout_s} s")
            time.sleep(0.05)
    finally:
        client.close()


def _wait_discovered(group: SentinelGroup, replicas: int, sentinels: int) -> None:
    """Until every sentinel knows every replica and the other sentinels (learned over
    the primary's hello channel, every 2 s): a failover before that finds no replica."""
    deadline = time.monotonic() + 60.0
    for port in group.sentinels:
        client = redis.Redis(
            port=port, socket_timeout=2, decode_responses=True, password=group.password
        )
        try:
            while True:
                state: Any = client.sentinel_master(group.master_name)
                if (
                    int(state["num-slaves"]) >= replicas
                    and int(state["num-other-sentinels"]) >= sentinels - 1
                ):
                    break
                if time.monotonic() > deadline:
                    raise RedisUnavailable(f"sentinel {port} did not discover the group: {state}")
                time.sleep(0.1)
        finally:
            client.close()
