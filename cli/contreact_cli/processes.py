"""`contreact up` / `down` / `status`: a local Redis (when none is configured) and every
service as its own process, with pid files in ``DATA/pids`` and logs in ``DATA/logs``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from contreact_bus.exceptions import RedisUnavailable
from contreact_bus.local_redis import answers, redis_server_argv, wait_until_answers
from contreact_cli.exceptions import CLIError
from contreact_cli.settings import CLISettings

SERVICE_MODULES = {
    "orchestrator": "contreact_orchestrator",
    "llm-worker": "contreact_llm",
    "memory": "contreact_memory",
    "embedder": "contreact_embedder",
    "ui": "contreact_ui",
}
REDIS_PROCESS = "redis"


@dataclass(frozen=True)
class ProcessInfo:
    name: str
    pid: int | None
    alive: bool
    log: Path


def pid_dir(settings: CLISettings) -> Path:
    return settings.data_dir / "pids"


def log_dir(settings: CLISettings) -> Path:
    return settings.data_dir / "logs"


def up(settings: CLISettings, *, llm_workers: int = 1, memory_workers: int = 1) -> list[str]:
    """Start what is not running yet; return lines describing what was done."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    pid_dir(settings).mkdir(exist_ok=True)
    log_dir(settings).mkdir(exist_ok=True)
    lines = []
    url = settings.redis_url
    if url is None:
        url, line = _start_local_redis(settings)
        lines.append(line)
    else:
        _check_redis(url)
        lines.append(f"redis: using {url}")
    env = {**os.environ, "REDIS_URL": url, "CONTREACT_DATA_DIR": str(settings.data_dir.resolve())}
    counts = {"orchestrator": 1, "llm-worker": llm_workers, "memory": memory_workers, "embedder": 1}
    for service, module in SERVICE_MODULES.items():
        for index in range(counts.get(service, 1)):
            name = service if index == 0 else f"{service}-{index + 1}"
            lines.append(_start(settings, name, [sys.executable, "-m", module], env))
    return lines


def down(settings: CLISettings) -> list[str]:
    lines = []
    infos = processes(settings)
    # Services first, Redis last, so nothing loses its connection mid-write.
    for info in sorted(infos, key=lambda i: i.name == REDIS_PROCESS):
        if info.alive and info.pid:
            _terminate(info.pid)
            lines.append(f"{info.name}: stopped (pid {info.pid})")
        (pid_dir(settings) / f"{info.name}.pid").unlink(missing_ok=True)
    if not lines:
        lines.append("nothing was running")
    return lines


def processes(settings: CLISettings) -> list[ProcessInfo]:
    directory = pid_dir(settings)
    if not directory.is_dir():
        return []
    out = []
    for pid_file in sorted(directory.glob("*.pid")):
        name = pid_file.stem
        try:
            pid: int | None = int(pid_file.read_text().strip())
        except ValueError:
            pid = None
        out.append(
            ProcessInfo(
                name, pid, pid is not None and _alive(pid), log_dir(settings) / f"{name}.log"
            )
        )
    return out


def _start(settings: CLISettings, name: str, argv: list[str], env: dict[str, str]) -> str:
    pid_file = pid_dir(settings) / f"{name}.pid"
    if pid_file.exists():
        try:
            pid = int(pid_file.read_text().strip())
        except ValueError:
            pid = -1
        if pid > 0 and _alive(pid):
            return f"{name}: already running (pid {pid})"
    log_path = log_dir(settings) / f"{name}.log"
    with log_path.open("ab") as log_file:
        proc = subprocess.Popen(
            argv,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
            stdin=subprocess.DEVNULL,
        )
    pid_file.write_text(str(proc.pid))
    return f"{name}: started (pid {proc.pid}, log {log_path})"


def _start_local_redis(settings: CLISettings) -> tuple[str, str]:
    url_file = settings.local_redis_url_file
    pid_file = pid_dir(settings) / f"{REDIS_PROCESS}.pid"
    if url_file.exists() and pid_file.exists():
        url = url_file.read_text().strip()
        if answers(url):
            return url, f"redis: already running at {url}"
    port = settings.local_redis_port
    url = f"redis://127.0.0.1:{port}/0"
    if answers(url):
        raise CLIError(
            f"a Redis that `contreact up` did not start already answers at {url}: "
            "set REDIS_URL to use it, or CONTREACT_LOCAL_REDIS_PORT to pick another port"
        )
    redis_dir = (settings.data_dir / "redis").resolve()
    redis_dir.mkdir(parents=True, exist_ok=True)
    argv = redis_server_argv(port, redis_dir, appendonly=True)
    _start(settings, REDIS_PROCESS, argv, dict(os.environ))
    try:
        wait_until_answers(url)
    except RedisUnavailable as exc:
        raise CLIError(f"{exc}: see {log_dir(settings) / 'redis.log'}") from None
    url_file.write_text(url)
    return url, f"redis: started at {url} (append-only file in {redis_dir})"


def _check_redis(url: str) -> None:
    if not answers(url):
        raise CLIError(f"REDIS_URL is set to {url}, but no Redis answers there")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie child of ours is not alive
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def _terminate(pid: int, timeout: float = 10.0) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while _alive(pid):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            break
        time.sleep(0.05)
