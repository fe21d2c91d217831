"""The ``your reply>`` prompt of a followed run, and sending an operator's reply."""

from __future__ import annotations

import asyncio
import sys

import redis.asyncio as aioredis

from contreact_bus.streams.inbox import Inbox
from contreact_cli.output import Printer
from contreact_events.core.state import AgentState
from contreact_events.wire.answers import operator_replied


class OperatorPrompt:
    """The ``your reply>`` prompt of a followed run, reading the terminal without
    blocking, so the follower keeps reading the run log while the operator types."""

    def __init__(self, redis: aioredis.Redis, run_id: str, out: Printer) -> None:
        self._redis = redis
        self._run_id = run_id
        self._out = out
        self._lines: asyncio.Queue[str] = asyncio.Queue()
        self._task_id: str | None = None
        """The question open now (its tool call's task id)."""
        self._sent: dict[str, str] = {}
        """task id -> id of the reply sent from here."""
        self._fd = sys.stdin.fileno()

    def open(self) -> None:
        asyncio.get_running_loop().add_reader(self._fd, self._readable)

    def close(self) -> None:
        asyncio.get_running_loop().remove_reader(self._fd)

    def _readable(self) -> None:
        line = sys.stdin.readline()
        if not line:  # end of input: nothing more will be typed
            self.close()
            return
        self._lines.put_nowait(line.rstrip("\n"))

    def ask(self, task_id: str) -> None:
        discard_typeahead(self._fd)
        self._task_id = task_id
        print("  your reply> ", end="", flush=True)

    async def send_typed(self, state: AgentState | None) -> None:
        """Send a typed line as the reply to the open question; say so when none is open."""
        while not self._lines.empty():
            line = self._lines.get_nowait()
            task_id = self._task_id
            if task_id is None or state is None or state.waiting_for is None:
                self._out("  (no question is waiting: that line was not sent)")
                continue
            self._sent[task_id] = await send_reply(self._redis, self._run_id, task_id, line)
            self._task_id = None

    def answered(self, task_id: str, reply_id: str, text: str) -> None:
        """The log has the reply to ``task_id``: close its question; if the reply came
        from elsewhere, say so (and that a reply sent from here was not used)."""
        if self._sent.get(task_id) == reply_id:
            return
        if self._task_id == task_id or task_id in self._sent:
            self._task_id = None
            unused = " (the reply typed here was not used)" if task_id in self._sent else ""
            self._out(f"\n  the question was answered elsewhere{unused}")


def discard_typeahead(fd: int) -> None:
    """Lines typed before a question was asked are not its answer."""
    try:
        import termios

        termios.tcflush(fd, termios.TCIFLUSH)
    except (ImportError, OSError):
        pass


async def send_reply(redis: aioredis.Redis, run_id: str, task_id: str, text: str) -> str:
    """Send the reply; return its message id (the event id it gets when taken)."""
    reply = operator_replied(run_id, task_id, text, "operator")
    await (await Inbox.open(redis)).send(reply)
    return reply.msg_id
