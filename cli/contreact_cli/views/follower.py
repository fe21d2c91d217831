"""Following a run as it goes: its progress lines, a line while it waits long on its
model, the operator prompt when the agent asks, the next steps when it ends."""

from __future__ import annotations

import asyncio
import sys
import time

import redis.asyncio as aioredis

from contreact_bus.run_log import RunLog
from contreact_cli.output import Printer
from contreact_cli.text import safe
from contreact_cli.views.operator_prompt import OperatorPrompt
from contreact_cli.views.progress import ProgressPrinter
from contreact_events.catalog import TERMINAL_TYPES
from contreact_events.core.fold import fold_all
from contreact_events.core.state import AgentState

PROGRESS_EVERY_S = 10.0
"""While a run waits on its model without news, a line this often says so."""


async def follow_run(
    redis: aioredis.Redis, run_id: str, out: Printer, *, progress_every_s: float = PROGRESS_EVERY_S
) -> int:
    """Print the run's progress until it ends. Ctrl-C stops following, not the run.

    A failed run's reason is printed once, on stderr. While the model check or a
    model call takes long, a line every ``progress_every_s`` says what is awaited.
    Interactive and asked by the agent, the ``your reply>`` prompt follows the run:
    a reply given elsewhere closes it with a note, and a line typed when no question
    waits is said not to be sent, never dropped silently."""
    log = RunLog(redis)
    printer = ProgressPrinter(out)
    last: bytes | str = "0-0"
    state: AgentState | None = None
    prompt = OperatorPrompt(redis, run_id, out) if sys.stdin.isatty() else None
    quiet_since = time.monotonic()
    reported = 0
    try:
        if prompt is not None:
            prompt.open()
        while True:
            if prompt is not None:
                await prompt.send_typed(state)
            block_ms = 250 if prompt is not None else 1000
            news = await log.follow(run_id, last, block_ms=block_ms)
            if not news and state is not None:
                waited = time.monotonic() - quiet_since
                if waited >= progress_every_s * (reported + 1):
                    reported += 1
                    line = waiting_line(state, waited)
                    if line:
                        out(line)
            for entry_id, event in news:
                last = entry_id
                quiet_since, reported = time.monotonic(), 0
                state = fold_all([event], state)
                if event.type == "RunFailed":
                    print(f"contreact: error: {safe(event.reason, one_line=True)}", file=sys.stderr)
                    return 1
                printer.show(event)
                if prompt is not None and event.type == "OperatorReplied":
                    prompt.answered(event.task_id, event.event_id, event.text)
                if event.type == "OperatorMessageSent" and state.waiting_for is not None:
                    if prompt is not None:
                        prompt.ask(state.waiting_for.task_id)
                    else:
                        out(f'  the run waits for the operator: `contreact reply {run_id} "..."`')
                if event.type in TERMINAL_TYPES:
                    print_next_steps(run_id, out)
                    return exit_code(state)
    except (KeyboardInterrupt, asyncio.CancelledError):
        out(
            f"stopped following; run {run_id} goes on (`contreact watch {run_id}`, "
            f"`contreact cancel {run_id}`)"
        )
        return 130
    finally:
        if prompt is not None:
            prompt.close()


def waiting_line(state: AgentState, waited_s: float) -> str | None:
    """What a run that has been quiet for ``waited_s`` waits on, if it is worth a line."""
    config = state.config
    if config is None:
        return None
    if state.phase == "checking":
        where = ""
        if config.backend in ("ollama", "auto"):
            host = config.ollama_client_config.host
            where = (
                f" at {safe(host, 80, one_line=True)} (connect timeout "
                f"{config.ollama_client_config.connect_timeout_s:g} s)"
            )
        return f"  still checking the model{where}: {waited_s:.0f} s"
    if state.phase == "awaiting_llm":
        where = f"cycle {state.cycle_number}, step {state.step}"
        return f"  the model is still answering ({where}): {waited_s:.0f} s"
    return None


def print_next_steps(run_id: str, out: Printer) -> None:
    out(
        f"next: `contreact export {run_id}` (JSONL), `contreact rebuild {run_id}`, "
        f"`contreact replay {run_id} --check`"
    )


def exit_code(state: AgentState | None) -> int:
    return 0 if state is not None and state.status == "completed" else 1
