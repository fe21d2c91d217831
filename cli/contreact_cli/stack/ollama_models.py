"""`contreact models pull|check FILE`: the Ollama models a run config or an experiment
file needs, on the Ollama host each run names (or ``--host``): which are there, which
are missing, and a pull of the missing ones with progress.

Pulls go through the real ``ollama`` client (``/api/pull``, streamed progress), one
model at a time, so the progress lines of two models never interleave.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import ollama

from contreact_cli.config_file import load_run_configs
from contreact_cli.exceptions import CLIError
from contreact_cli.output import Printer
from contreact_cli.text import safe

OLLAMA_BACKENDS = ("ollama", "auto")
"""Backends that run a model on an Ollama host (``auto`` does when the model is there)."""


@dataclass(frozen=True)
class ModelNeed:
    model: str
    host: str


@dataclass
class HostReport:
    host: str
    present: list[str] = field(default_factory=list)
    pulled: list[str] = field(default_factory=list)
    missing: dict[str, str] = field(default_factory=dict)
    """Model -> why it is missing (not pulled yet, or the pull's error)."""


def tagged(name: str) -> str:
    """Ollama's full name of a model: ``llama3`` is ``llama3:latest``."""
    return name if ":" in name else f"{name}:latest"


def needed_models(path: Path, host: str | None = None) -> list[ModelNeed]:
    """The models a run config or an experiment file needs from Ollama: each run on
    an Ollama backend gives one need, its model on its host (``host`` overrides the
    file's), each need once, in the file's order."""
    needs = [
        ModelNeed(tagged(config.model_name), host or config.ollama_client_config.host)
        for config in load_run_configs(path)
        if config.backend in OLLAMA_BACKENDS
    ]
    return list(dict.fromkeys(needs))


async def models_on(client: ollama.AsyncClient, host: str) -> set[str]:
    try:
        listing = await client.list()
    except (ConnectionError, httpx.HTTPError, OSError) as exc:
        raise CLIError(
            f"Ollama does not answer at {host} ({type(exc).__name__}): start it "
            "(`ollama serve`, or `docker compose up -d ollama`), or name another with --host"
        ) from None
    except ollama.ResponseError as exc:
        raise CLIError(f"Ollama at {host} refused to list its models: {exc.error}") from None
    return {tagged(entry.model) for entry in listing.models if entry.model}


async def sync_models(
    needs: Sequence[ModelNeed], out: Printer, *, pull: bool, tty: bool | None = None
) -> list[HostReport]:
    """For each host: list its models, then (with ``pull``) pull the missing ones."""
    tty = sys.stdout.isatty() if tty is None else tty
    reports = []
    for host in dict.fromkeys(need.host for need in needs):
        client = ollama.AsyncClient(host=host)
        report = HostReport(host)
        have = await models_on(client, host)
        for model in dict.fromkeys(n.model for n in needs if n.host == host):
            if model in have:
                report.present.append(model)
            elif not pull:
                report.missing[model] = "not pulled"
            else:
                error = await pull_one(client, model, host, out, tty)
                if error is None:
                    report.pulled.append(model)
                else:
                    report.missing[model] = error
        reports.append(report)
    return reports


async def pull_one(
    client: ollama.AsyncClient, model: str, host: str, out: Printer, tty: bool
) -> str | None:
    """Pull ``model`` showing progress; None when it arrived, else the reason."""
    out(f"pulling {safe(model, 200, one_line=True)} on {safe(host, 200, one_line=True)}")
    progress = PullProgress(out, tty)
    try:
        async for part in await client.pull(model, stream=True):
            progress.show(part.status or "", part.completed, part.total)
    except ollama.ResponseError as exc:
        progress.end()
        return safe(exc.error, 200, one_line=True)
    except (ConnectionError, httpx.HTTPError, OSError) as exc:
        progress.end()
        return f"Ollama stopped answering at {host} ({type(exc).__name__})"
    progress.end()
    return None


class PullProgress:
    """Ollama's progress lines, shown readably: each new status once, and a layer's
    download in percent (every 10 % on a terminal line of its own when not a TTY)."""

    STEP = 10

    def __init__(self, out: Printer, tty: bool) -> None:
        self.out = out
        self.tty = tty
        self.status = ""
        self.shown_percent = -1
        self.open_line = False

    def show(self, status: str, completed: int | None, total: int | None) -> None:
        status = safe(status, 80, one_line=True)
        if status != self.status:
            self.end()
            self.status = status
            self.shown_percent = -1
            if not total:
                self.out(f"  {status}")
        if not total:
            return
        percent = min(100, (completed or 0) * 100 // total)
        line = f"  {status}: {percent:3d}% of {_size(total)}"
        if self.tty:
            sys.stdout.write("\r" + line)
            sys.stdout.flush()
            self.open_line = True
        elif percent // self.STEP > self.shown_percent // self.STEP or self.shown_percent < 0:
            self.out(line)
        self.shown_percent = percent

    def end(self) -> None:
        if self.open_line:
            sys.stdout.write("\n")
            sys.stdout.flush()
            self.open_line = False


def _size(n: int) -> str:
    size = float(n)
    for unit in ("B", "kB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{size:.1f} GB"


def print_reports(reports: Sequence[HostReport], out: Printer) -> bool:
    """One line per host; returns whether every model is there."""
    complete = True
    for report in reports:
        host = safe(report.host, 200, one_line=True)
        parts = [f"{safe(m, 200, one_line=True)} (present)" for m in report.present]
        parts += [f"{safe(m, 200, one_line=True)} (pulled)" for m in report.pulled]
        if parts:
            out(f"{host}: {', '.join(parts)}")
        for model, why in report.missing.items():
            complete = False
            out(f"{host}: MISSING {safe(model, 200, one_line=True)}: {safe(why, one_line=True)}")
    return complete
