"""Shared helpers of the benchmarks: a private Redis, the services as processes,
timing, printing of figures, ratios and verdicts, and the smoke size.

Every benchmark takes ``--smoke``: the same code path at a tiny size, so that
``tests/integration/test_bench_smoke.py`` notices within seconds when a benchmark
no longer runs (it hangs, or stops producing its figures). Its figures then mean
nothing and its verdicts are not judged. And ``--record``: each verdict (and each
figure a benchmark reports with ``figure``) is appended to ``bench/results.jsonl``
(``bench/_support/results.py``), which ``docs/benchmarks.md`` is generated from."""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import redis

from bench._support.results import add_record_flag, record, refuse_smoke
from contreact_bus.exceptions import RedisUnavailable
from contreact_bus.local_redis import running_redis_server

ROOT = Path(__file__).resolve().parents[2]
SERVICE_MODULES = {
    "orchestrator": "contreact_orchestrator",
    "llm-worker": "contreact_llm",
    "memory": "contreact_memory",
}


SMOKE_NOTE = "   smoke size: this only checks that the benchmark runs; its figures mean nothing"


def add_smoke_flag(parser: argparse.ArgumentParser) -> None:
    """The flags every benchmark takes: ``--smoke`` and ``--record``."""
    add_record_flag(parser)
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="a tiny size, to check in seconds that the benchmark still runs "
        "(its figures then mean nothing)",
    )


def smoke_args(argv: list[str] | None = None, *, prog: str) -> argparse.Namespace:
    """The arguments of a benchmark whose only option is ``--smoke``."""
    parser = argparse.ArgumentParser(prog=prog)
    add_smoke_flag(parser)
    return parser.parse_args(argv)


def use_smoke_sizes(namespace: dict[str, Any], **sizes: Any) -> None:
    """Set a benchmark module's size constants to their smoke values (each must be
    one of its constants: a renamed constant fails here, not silently)."""
    for name, value in sizes.items():
        if name not in namespace:
            raise KeyError(f"bench: no size constant {name} to shrink; fix the smoke sizes")
        namespace[name] = value
    refuse_smoke()
    print(SMOKE_NOTE)


@contextlib.contextmanager
def redis_server() -> Iterator[str]:
    """A private redis-server on a free 127.0.0.1 port, in a temporary directory,
    keeping nothing; stopped at the end. Yields its URL."""
    with tempfile.TemporaryDirectory(prefix="bench-redis-") as workdir:
        try:
            with running_redis_server(Path(workdir)) as url:
                yield url
        except RedisUnavailable as exc:
            raise SystemExit(f"bench: {exc}") from None


def stop_process(proc: subprocess.Popen[Any], timeout: float = 10.0) -> None:
    """SIGTERM the process we started, SIGKILL it if it does not exit in time."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=timeout)


def start_module(
    module: str, env: dict[str, str], log: Path, *, profile: Path | None = None
) -> subprocess.Popen[bytes]:
    """``python -m MODULE`` from the repository root with ``env``, its output appended
    to ``log``; under cProfile writing ``profile`` when it stops, if given."""
    argv = [sys.executable]
    if profile is not None:
        argv += ["-m", "cProfile", "-o", str(profile)]
    with log.open("ab") as log_file:
        return subprocess.Popen(
            [*argv, "-m", module],
            env=env,
            cwd=ROOT,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )


def wait_for_heartbeats(
    redis_url: str,
    wanted: dict[str, int],
    procs: dict[str, subprocess.Popen[bytes]],
    logs: Path,
    timeout_s: float = 60,
) -> None:
    """Until ``wanted[service]`` instances of each service have a heartbeat; the
    benchmark stops with the tail of each log (``logs/{name}.log``) if a process of
    ``procs`` exits or the time runs out first."""
    from contreact_events.names import SERVICES_HEARTBEAT

    client = redis.Redis.from_url(redis_url)
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            beats = [k.decode().split(":", 1)[0] for k in client.hkeys(SERVICES_HEARTBEAT)]
            if all(beats.count(name) >= n for name, n in wanted.items()):
                return
            dead = [n for n, p in procs.items() if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                tail = "\n".join((logs / f"{n}.log").read_text()[-2000:] for n in procs)
                raise RuntimeError(f"services did not start (dead: {dead})\n{tail}")
            time.sleep(0.1)
    finally:
        client.close()


@contextlib.contextmanager
def services(
    redis_url: str,
    data_dir: Path,
    *,
    profile_dir: Path | None = None,
    extra_env: dict[str, str] | None = None,
    counts: dict[str, int] | None = None,
) -> Iterator[dict[str, subprocess.Popen[bytes]]]:
    """The orchestrator, one LLM worker and one memory service as subprocesses
    (``python -m MODULE``), logs in ``data_dir/logs``; ready once every one has a
    heartbeat; each stopped by its pid at the end. With ``profile_dir`` each runs
    under cProfile and writes ``{name}.prof`` there when stopped. ``counts`` starts
    more than one of a service (``{"orchestrator": 2}``): the second is named
    ``orchestrator-2`` in the yielded dict, its log and its profile."""
    logs = data_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "REDIS_URL": redis_url,
        "CONTREACT_DATA_DIR": str(data_dir),
        "PYTHONUNBUFFERED": "1",
        **(extra_env or {}),
    }
    procs: dict[str, subprocess.Popen[bytes]] = {}
    wanted = {name: (counts or {}).get(name, 1) for name in SERVICE_MODULES}
    try:
        for name, module in SERVICE_MODULES.items():
            for n in range(1, wanted[name] + 1):
                named = name if n == 1 else f"{name}-{n}"
                profile = None if profile_dir is None else profile_dir / f"{named}.prof"
                procs[named] = start_module(module, env, logs / f"{named}.log", profile=profile)
        wait_for_heartbeats(redis_url, wanted, procs, logs)
        yield procs
    finally:
        for proc in procs.values():
            stop_process(proc)


def cpu_seconds(pid: int) -> float:
    """User and system CPU of a process so far (``/proc/PID/stat``, Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def logged_problems(data_dir: Path) -> dict[str, list[str]]:
    """Per service started by ``services``: the first line of each error or traceback
    in its log (a run that completes can hide a call that failed and was retried)."""
    found: dict[str, list[str]] = {}
    for log in sorted((data_dir / "logs").glob("*.log")):
        lines = log.read_text(errors="replace").splitlines()
        found[log.stem] = [
            line
            for line in lines
            if " ERROR " in line or " CRITICAL " in line or line.startswith("Traceback")
        ]
    return found


def cli(env: dict[str, str], *args: str, timeout: float = 600) -> str:
    """Run ``contreact ARGS`` with ``env``; its output, or the benchmark stops with it."""
    proc = subprocess.run(
        [sys.executable, "-m", "contreact_cli", *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if proc.returncode != 0:
        raise SystemExit(f"bench: contreact {' '.join(args)} failed:\n{proc.stdout}{proc.stderr}")
    return proc.stdout


def median_time(fn: Callable[[], Any], repeats: int) -> float:
    """Median wall time of ``repeats`` calls of ``fn`` (seconds)."""
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def header(title: str) -> None:
    print(f"== {title}")
    print(
        f"   {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.python_implementation()} "
        f"{platform.python_version()}, {os.cpu_count()} cpu(s), {platform.machine()}"
    )


def row(label: str, value: float, unit: str, note: str = "") -> None:
    print(f"   {label:<46} {value:>12,.3f} {unit:<8} {note}".rstrip())


def ratio(label: str, numerator: float, denominator: float, note: str = "") -> float:
    value = numerator / denominator if denominator else float("inf")
    print(f"   {label:<46} {value:>12,.2f} x        {note}".rstrip())
    return value


def verdict(
    name: str,
    passed: bool,
    detail: str,
    *,
    value: float | str | None = None,
    unit: str = "",
    target: str = "",
) -> None:
    """Print the verdict line of a target (and record it with ``--record``: ``value``
    in ``unit`` against ``target``, as the benchmark states them)."""
    word = "PASS" if passed else "FAIL"
    print(f"{word}: {name}: {detail}")
    record(
        name,
        detail if value is None else value,
        unit=unit,
        target=target,
        verdict=word,
        detail=detail,
    )


def ratio_verdict(
    name: str, value: float, ceiling: float, detail: str, *, target: str = ""
) -> None:
    """The verdict of a ratio that passes at or under ``ceiling``: ``value`` recorded in
    ``x`` against ``target`` (default ``<= {ceiling}x``)."""
    target = target or f"<= {ceiling}x"
    verdict(name, value <= ceiling, detail, value=value, unit="x", target=target)


def figure(name: str, value: float, unit: str, detail: str = "") -> None:
    """Record a figure the benchmark reports but does not judge (no target, or a
    retired one): no verdict line is printed for it."""
    record(name, value, unit=unit, detail=detail)
