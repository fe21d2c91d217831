"""A chat call on a pool of hosts (``pool``): on its run's host, moved when that host
cannot be reached.

The scheduler takes a slot on some host of the route's pool before it reads a call
(it cannot know the call's run before); here the call is put on its run's host: the
slot it came with when that is the host, else a slot taken there (the first one is
given back; while the run's host is full the call waits for a slot there, holding
none). A call whose host cannot be reached (``HostDown``) marks it down and goes to
the next host the pool gives; when none is up, the call's answer is the failure that
names them all. A route of one host is called as it always was.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping
from typing import Protocol

from contreact_bus.llm_routes import Route
from contreact_events.config import EMBEDDED_HOST
from contreact_events.wire.tasks import InboxMessage, LLMTask
from contreact_llm.exceptions import HostDown
from contreact_llm.handler import LLMTaskHandler, failure
from contreact_llm.scheduling.host_slots import HostLimits, HostSlots, Lease
from contreact_llm.scheduling.pool import all_down, tie_break
from contreact_llm.scheduling.pool_state import PoolState

log = logging.getLogger(__name__)

WAIT_S = 0.1
"""How often a call waiting for a slot on its run's host asks again (a slot freed
rings the workers' bell too: ``wake``)."""


class HoldsLease(Protocol):
    lease: Lease | None


class PoolCalls:
    def __init__(
        self,
        handler: LLMTaskHandler,
        slots: HostSlots,
        state: PoolState,
        limits: Callable[[], Mapping[str, HostLimits]],
        stick_wait_s: float = 20.0,
    ) -> None:
        self._handler = handler
        self._slots = slots
        self.state = state
        self._limits = limits
        self.stick_wait_s = stick_wait_s
        """Longest a call waits for a slot on its run's host before any up host of the
        pool with a free slot serves it (the run keeps its pin)."""
        self.freed = asyncio.Event()
        """Set when a slot is freed anywhere (the scheduler's bell)."""

    async def reply(self, held: HoldsLease, route: Route, task: LLMTask) -> InboxMessage:
        """The answer to ``task``, from its run's host; ``held.lease`` is the slot the
        call holds when it returns (None: it holds none)."""
        lease = held.lease
        assert lease is not None
        if len(route.hosts) < 2 or lease.host == EMBEDDED_HOST:
            return await self._handler.reply(task.model_copy(update={"host": lease.host}))
        failed: dict[str, str] = {}
        while True:
            host, down = await self._slot_on_runs_host(held, route, task.run_id, failed)
            if host is None:
                error = all_down(route.model, route.hosts, down, route.backend)
                log.warning("%s: %s", route.id, error)
                return failure(task, error, retryable=True, attempts=max(len(failed), 1))
            try:
                return await self._handler.reply(task.model_copy(update={"host": host}))
            except HostDown as exc:
                log.warning("%s: %s is down (%s); the call moves", route.id, host, exc.error)
                failed[host] = exc.error
                await self.state.mark_down(host, exc.error)

    async def _slot_on_runs_host(
        self, held: HoldsLease, route: Route, run_id: str, failed: dict[str, str]
    ) -> tuple[str | None, dict[str, str]]:
        """Hold a slot on the run's host (waiting for one while it is full, asking the
        pool again each time: its host may go down meanwhile), at most ``stick_wait_s``:
        then a slot on any up host. (host, hosts down); host None, holding no slot, when
        every host is down."""
        until = time.monotonic() + self.stick_wait_s
        while True:
            placed = await self.state.place(route.id, route.hosts, run_id, failed)
            host = placed.host
            lease = held.lease
            if lease is not None and lease.host == host:
                return host, placed.down
            if host is None:
                await self._give_back(held)
                return None, placed.down
            got = await self._slots.acquire(host, route.model, self._limits()[host])
            if isinstance(got, list):
                await self._give_back(held)
                held.lease = got[0]
                return host, placed.down
            if got != "full" and lease is not None and lease.host not in placed.down:
                # its host cannot load the model now (no room, draining): this call is
                # served where its slot is, and the run keeps its pin
                return lease.host, placed.down
            await self._give_back(held)
            if time.monotonic() >= until:
                spill = await self._any_slot(route, run_id, placed.down)
                if spill is not None:
                    held.lease = spill
                    return spill.host, placed.down
            self.freed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.freed.wait(), WAIT_S)

    async def _any_slot(self, route: Route, run_id: str, down: dict[str, str]) -> Lease | None:
        """A slot on an up host of the pool, in the run's order of the hosts."""
        for host in sorted(route.hosts, key=lambda host: tie_break(run_id, host)):
            if host in down:
                continue
            got = await self._slots.acquire(host, route.model, self._limits()[host])
            if isinstance(got, list):
                log.info("%s: %s waited %.0fs for its host; served by %s", route.id, run_id,
                         self.stick_wait_s, host)  # fmt: skip
                return got[0]
        return None

    async def _give_back(self, held: HoldsLease) -> None:
        if held.lease is not None:
            await self._slots.release(held.lease)
            held.lease = None
