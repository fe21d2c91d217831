"""Requests that start a run: a run request (``completed_request``), and a fork request.

Fork requests (the protocol: ``contreact_bus.forks``): read the parent (from Redis, or
its archive once it left, ``load_events``), plan the child with the pure core
(``history.fork.plan_fork``: the cut after ``CycleEnded(K)``, the re-keyed prefix folded
once, ``RunForked``), or say in one line why not.

The child's first append (prefix, ``RunForked`` and what ``decide`` derives from it)
is the orchestrator's usual write with expected length 0 under the child's fence: of
two requests for one id, one is logged, the other finds the log moved and is refused
when decided again. A refusal is written where the requester waits for it
(``forks.refuse``); the parent is only ever read.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis
from pydantic import ValidationError

from contreact_bus.exceptions import RunNotFound
from contreact_bus.forks import logged_fork_id, refuse
from contreact_bus.run_log import RunLog
from contreact_bus.runs import load_events
from contreact_events.catalog import Event
from contreact_events.config.overrides import parse_assignments
from contreact_events.core.decide import Decision, decide
from contreact_events.core.state import AgentState
from contreact_events.exceptions import ConfigError, ForkRefused
from contreact_events.history.fork import ForkPlan, plan_fork
from contreact_events.protocol import paper_system_prompt
from contreact_events.wire.tasks import ForkRequest, InboxMessage

log = logging.getLogger(__name__)


def completed_request(message: InboxMessage, version: str) -> InboxMessage:
    """Stamp the code version; use the paper's prompt when none was given."""
    data: dict[str, Any] = {**message.data, "orchestrator_version": version}
    config = data.get("config")
    if isinstance(config, dict) and not config.get("system_prompt"):
        data["config"] = {**config, "system_prompt": paper_system_prompt()}
    return message.model_copy(update={"data": data})


async def decide_fork(
    redis: aioredis.Redis,
    archive_dir: Path,
    message: InboxMessage,
    state: AgentState | None,
    *,
    version: str,
) -> tuple[tuple[Event, ...], Decision] | None:
    """The re-keyed prefix of the fork ``message`` asks for, and ``decide`` of its
    ``RunForked`` in the state the prefix folds to; None when refused (the reason written for
    ``contreact fork``) or already logged (a redelivered request). ``state`` is the
    child id's state as the orchestrator holds it (None: quarantined)."""
    child = message.run_id
    if state is None or state.phase != "new":
        prefix = state.fork_prefix if state is not None else 0
        if prefix and await logged_fork_id(RunLog(redis), child, prefix) == message.msg_id:
            return None  # this very request was logged before (a redelivery)
        await refuse_fork(redis, message, f"run {child} exists: fork with another --run-id")
        return None
    try:
        plan = await fork_plan(redis, archive_dir, message, now=datetime.now(UTC), version=version)
    except ForkRefused as exc:
        await refuse_fork(redis, message, str(exc))
        return None
    decision = decide(plan.state, plan.forked)
    if decision.ignored is not None:
        await refuse_fork(redis, message, decision.ignored)
        return None
    log.info(
        "run %s: forked from %s at cycle %d (%d events copied)",
        child,
        plan.forked.parent_run_id,
        plan.forked.at_cycle,
        len(plan.prefix),
    )
    return plan.prefix, decision


async def fork_plan(
    redis: aioredis.Redis,
    archive_dir: Path,
    message: InboxMessage,
    *,
    now: datetime,
    version: str,
) -> ForkPlan:
    """The plan of the fork ``message`` asks for; ``ForkRefused`` says why not."""
    try:
        request = ForkRequest.model_validate(message.data)
        assignments = parse_assignments(request.settings)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ForkRefused(f"fork request {message.msg_id}: {first['msg']}") from None
    except ConfigError as exc:
        raise ForkRefused(str(exc)) from None
    try:
        events = await load_events(redis, archive_dir, request.parent_run_id)
    except RunNotFound as exc:
        raise ForkRefused(str(exc)) from None
    return plan_fork(
        events,
        child_run_id=message.run_id,
        at_cycle=request.at_cycle,
        model=request.model,
        assignments=assignments,
        event_id=message.msg_id,
        ts=now,
        version=version,
        question=request.question,
    )


async def refuse_fork(redis: aioredis.Redis, message: InboxMessage, reason: str) -> None:
    """Tell the requester (waiting on this request's key) why its fork was refused."""
    log.warning("run %s: fork refused: %s", message.run_id, reason)
    await refuse(redis, message, reason)
