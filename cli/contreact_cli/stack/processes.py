"""`contreact up` / `down` / `status`: a supervisor process that starts a local Redis
(when none is configured) and every service, restarts whatever dies, and says what it
sees in ``DATA/supervisor.json``. Its pid file records the process's start time and
command line, so a stale pid file (after a reboot) never makes `up` skip starting or
`down` signal an unrelated process."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contreact_bus.failover.address import sentinel_diagnosis
from contreact_bus.local_redis import answers, redis_server_argv
from contreact_bus.redact import redact_url
from contreact_cli.exceptions import CLIError
from contreact_cli.settings import CLISettings
from contreact_cli.stack.supervisor import ChildPlan, Plan

SERVICE_MODULES = {
    "orchestrator": "contreact_orchestrator",
    "llm-worker": "contreact_llm",
    "memory": "contreact_memory",
    "embedder": "contreact_embedder",
    "ui": "contreact_ui",
    "assessor": "contreact_assessor",
}
REDIS_PROCESS = "redis"
SUPERVISOR = "supervisor"
SUPERVISOR_MODULE = "contreact_cli.stack.supervisor"


@dataclass(frozen=True)
class ProcessInfo:
    name: str
    pid: int | None
    alive: bool
    log: Path
    restarts: int = 0
    state: str = ""
    last_exit: str | None = None
    last_error: str | None = None
    started_at: float | None = None
    kind: str = "service"


def pid_dir(settings: CLISettings) -> Path:
    return settings.data_dir / "pids"


def log_dir(settings: CLISettings) -> Path:
    return settings.data_dir / "logs"


def status_file(settings: CLISettings) -> Path:
    return settings.data_dir / "supervisor.json"


def plan_file(settings: CLISettings) -> Path:
    return settings.data_dir / "supervisor-plan.json"


def supervisor_pid_file(settings: CLISettings) -> Path:
    return pid_dir(settings) / f"{SUPERVISOR}.pid"


def up(
    settings: CLISettings,
    *,
    llm_workers: int = 1,
    memory_workers: int = 1,
    orchestrators: int = 1,
    embedders: int = 1,
    assessors: int = 1,
) -> list[str]:
    """Start the supervisor (unless it runs already); return lines saying what was done.
    Readiness is `wait_until_up`'s business."""
    for directory in (settings.data_dir, pid_dir(settings), log_dir(settings)):
        directory.mkdir(parents=True, exist_ok=True)
    running = supervisor_pid(settings)
    if running is not None:
        return [f"supervisor: already running (pid {running})"]
    lines: list[str] = []
    children: list[ChildPlan] = []
    url = settings.redis_url
    address = settings.redis_address()
    if address.through_sentinels:  # (the URL gives the credentials, TLS and database)
        url = url or address.url
    if url is None:
        url, line, redis_child = _local_redis_plan(settings)
        lines.append(line)
        children.append(redis_child)
    elif address.through_sentinels and not answers(address):
        raise CLIError(sentinel_diagnosis(address))
    elif not answers(address):
        raise CLIError(f"REDIS_URL is set to {redact_url(url)}, but no Redis answers there")
    else:
        lines.append(f"redis: using {address.describe()}")
    data_dir = str(settings.data_dir.resolve())
    env = {"REDIS_URL": url, "CONTREACT_DATA_DIR": data_dir, "PYTHONUNBUFFERED": "1"}
    if address.through_sentinels:
        env |= {"REDIS_SENTINELS": settings.redis_sentinels or "",
                "REDIS_MASTER_NAME": address.master_name}  # fmt: skip
    counts = {
        "orchestrator": orchestrators,
        "llm-worker": llm_workers,
        "memory": memory_workers,
        "embedder": embedders,
        "assessor": assessors,
    }
    for service, module in SERVICE_MODULES.items():
        for index in range(counts.get(service, 1)):
            name = service if index == 0 else f"{service}-{index + 1}"
            kind = "orchestrator" if service == "orchestrator" else "service"
            children.append(ChildPlan(name, [sys.executable, "-m", module], env, kind))
    plan = Plan(
        data_dir=data_dir,
        status_file=str(status_file(settings).resolve()),
        log_dir=str(log_dir(settings).resolve()),
        redis_url=url,
        redis_sentinels=settings.redis_sentinels or "",
        redis_master_name=address.master_name,
        children=children,
        stall_s=settings.service_stall_s,
    )
    plan.save(plan_file(settings))
    status_file(settings).unlink(missing_ok=True)
    log_path = log_dir(settings) / f"{SUPERVISOR}.log"
    with log_path.open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", SUPERVISOR_MODULE, str(plan_file(settings).resolve())],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    plan_path = str(plan_file(settings).resolve())
    deadline = time.monotonic() + 10
    while not _is_process(proc.pid, plan_path):  # until it runs the supervisor (exec'd)
        if proc.poll() is not None or time.monotonic() > deadline:
            raise CLIError(f"the supervisor did not start: see {log_path}")
        time.sleep(0.01)
    _write_pid_file(supervisor_pid_file(settings), proc.pid)
    lines.append(f"supervisor: started (pid {proc.pid}, log {log_path})")
    lines += [f"{c.name}: supervised (log {log_dir(settings) / c.name}.log)" for c in children]
    return lines


def down(settings: CLISettings) -> list[str]:
    """Stop the supervisor (it stops the services, then Redis); if it is gone but its
    children are not, stop those that are verifiably ours."""
    running = [info for info in processes(settings) if info.alive and info.pid]
    pid = supervisor_pid(settings)
    if pid is not None:
        _terminate(pid, timeout=30.0)
    lines = []
    for info in running:
        if info.name == SUPERVISOR:
            continue
        assert info.pid is not None
        if _command_line(info.pid) is not None:  # the supervisor did not stop it
            _terminate(info.pid)
        lines.append(f"{info.name}: stopped (pid {info.pid})")
    if pid is not None:
        lines.append(f"{SUPERVISOR}: stopped (pid {pid})")
    supervisor_pid_file(settings).unlink(missing_ok=True)
    return lines or ["nothing was running"]


def processes(settings: CLISettings) -> list[ProcessInfo]:
    """The supervisor and its children as the status file has them; alive means the
    process runs now and is the one recorded (command line checked)."""
    status = read_status(settings)
    out: list[ProcessInfo] = []
    supervisor = supervisor_pid(settings)
    if status is None and supervisor is None:
        return []
    out.append(
        ProcessInfo(
            SUPERVISOR,
            supervisor or (status or {}).get("pid"),
            supervisor is not None,
            log_dir(settings) / f"{SUPERVISOR}.log",
            kind=SUPERVISOR,
        )
    )
    for child in (status or {}).get("children", []):
        pid = child.get("pid")
        needle = "redis-server" if child.get("kind") == "redis" else None
        module = SERVICE_MODULES.get(_base_service(child["name"]))
        alive = bool(pid) and _is_process(pid, needle or module or child["name"])
        out.append(
            ProcessInfo(
                name=child["name"],
                pid=pid,
                alive=alive,
                log=Path(child.get("log") or log_dir(settings) / f"{child['name']}.log"),
                restarts=int(child.get("restarts", 0)),
                state=str(child.get("state", "")),
                last_exit=child.get("last_exit"),
                last_error=child.get("last_error"),
                started_at=child.get("started_at"),
                kind=str(child.get("kind", "service")),
            )
        )
    return out


def read_status(settings: CLISettings) -> dict[str, Any] | None:
    try:
        data = json.loads(status_file(settings).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def supervisor_pid(settings: CLISettings) -> int | None:
    """The supervisor's pid if it runs now: the pid file's process is alive, started
    when the file says, and runs the supervisor of this data dir."""
    path = supervisor_pid_file(settings)
    try:
        record = json.loads(path.read_text())
        pid = int(record["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    plan = str(plan_file(settings).resolve())
    if not _is_process(pid, plan):
        return None
    started = record.get("start_ticks")
    if started is not None and _start_ticks(pid) not in (None, started):
        return None
    return pid


def _base_service(name: str) -> str:
    base, _, index = name.rpartition("-")
    return base if index.isdigit() and base in SERVICE_MODULES else name


def _local_redis_plan(settings: CLISettings) -> tuple[str, str, ChildPlan]:
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
    settings.local_redis_url_file.write_text(url)
    line = f"redis: started at {url} (append-only file in {redis_dir})"
    return url, line, ChildPlan(REDIS_PROCESS, argv, {}, "redis")


def _write_pid_file(path: Path, pid: int) -> None:
    record = {"pid": pid, "start_ticks": _start_ticks(pid)}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record))
    tmp.replace(path)


def _is_process(pid: int, needle: str) -> bool:
    """Alive, not a zombie, and its command line mentions ``needle``."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    command = _command_line(pid)
    if command is None:
        return False
    return needle in command


def _command_line(pid: int) -> str | None:
    proc = Path(f"/proc/{pid}")
    if proc.is_dir():
        try:
            stat = (proc / "stat").read_text()
            if stat.rsplit(")", 1)[-1].split()[0] == "Z":
                return None
            return (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            return None
    try:  # not Linux: ask ps
        out = subprocess.run(
            ["ps", "-o", "command=", "-p", str(pid)], capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def _start_ticks(pid: int) -> int | None:
    """When the process started (clock ticks since boot, Linux), to tell a reused pid."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[-1].split()[19])


def _terminate(pid: int, timeout: float = 10.0) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while _command_line(pid) is not None:
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            return
        time.sleep(0.05)
