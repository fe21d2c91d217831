"""Interviews of a run, as the paper's harness has them (``szeider/contreact``: ``-q``
and ``query``):

- ``contreact ask RUN "QUESTION" [--at-cycle K] [--model M]``: a fork of RUN at the end
  of cycle K (default: its last ended cycle) that runs one cycle, opened by the question
  as a researcher's turn (``core.researcher``; ``RunForked.question`` in the log); the
  answer is that cycle. RUN is only read (``contreact fork``'s machinery).
- ``contreact query RUN "QUESTION" [--model M]``: read-only, no tools: the run's model
  (or M, on the run's backend and hosts) gets the history exactly as the agent last saw
  it, then the question (``history.interview``); the answer is recorded beside the run
  with its input hash (``contreact_bus.queries``), never in its log.

Both work on a live, a finished and an archived run.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import os
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import redis.asyncio as aioredis

from contreact_bus import queries
from contreact_bus.assessments.evaluators import BadEvaluator, evaluator_from_config
from contreact_bus.experiments import existing_runs
from contreact_bus.runs import load_events
from contreact_cli.args import add_command, positive_seconds, run_id, text
from contreact_cli.commands.forks import fork_run
from contreact_cli.connection import redis_client
from contreact_cli.exceptions import CLIError
from contreact_cli.output import Printer, out, print_json
from contreact_cli.runs.model_checks import worker_call
from contreact_cli.settings import CLISettings
from contreact_cli.stack.service_waits import wait_for_services
from contreact_cli.text import safe
from contreact_events.catalog.cycle import CycleEnded, LLMFailed, LLMResponded
from contreact_events.catalog.query import RunQueried
from contreact_events.catalog.run import ModelChecked
from contreact_events.core.researcher import question_problem
from contreact_events.history.fork import model_problem
from contreact_events.history.interview import QueryInput, query_input
from contreact_events.names import query_job_id
from contreact_events.wire.tasks import LLMTask

BY_ENV = "CONTREACT_BY"
"""Who asks, when ``--by`` is not given (else the login name)."""


def register(sub: Any) -> None:
    a = add_command(
        sub,
        "ask",
        cmd_ask,
        "interview a run: a fork at cycle K whose next cycle opens with your question",
    )
    a.add_argument("run", type=run_id, help="the run to interview (read only)")
    a.add_argument("question", type=text, help="the question, in quotes")
    a.add_argument("--at-cycle", type=int, help="the cycle to ask after (default: the last ended)")
    a.add_argument("--model", help="the model that answers (default: the run's)")
    a.add_argument("--run-id", type=run_id, help="the interview's run id (default: RUN-cK-ask)")
    a.add_argument("--detach", action="store_true", help="return once the interview is logged")
    a.add_argument("--wait", type=positive_seconds, default=60.0, help="seconds to wait (60)")
    q = add_command(
        sub,
        "query",
        cmd_query,
        "ask a run's model a question about the run, read only, no tools; recorded beside it",
        listing=True,
    )
    q.add_argument("run", type=run_id, help="the run (read only)")
    q.add_argument("question", type=text, help="the question, in quotes")
    q.add_argument("--model", help="the model that answers (default: the run's)")
    q.add_argument("--by", help=f"who asks (default: ${BY_ENV}, else your login name)")
    q.add_argument(
        "--wait", type=positive_seconds, default=300.0, help="seconds to wait for the answer (300)"
    )
    listed = add_command(
        sub, "queries", cmd_queries, "the questions asked of a run and their answers", listing=True
    )
    listed.add_argument("run", type=run_id, help="the run")


def cmd_ask(args: argparse.Namespace, settings: CLISettings) -> int:
    return asyncio.run(
        ask(
            settings,
            args.run,
            args.question,
            at_cycle=args.at_cycle,
            model=args.model,
            child_id=args.run_id,
            follow=not args.detach,
            wait_s=args.wait,
        )
    )


async def ask(
    settings: CLISettings,
    parent: str,
    question: str,
    *,
    at_cycle: int | None = None,
    model: str | None = None,
    child_id: str | None = None,
    follow: bool = True,
    wait_s: float = 60.0,
    out: Printer = out,
) -> int:
    """The interview of ``parent``: one cycle after ``at_cycle``, opened by ``question``."""
    problem = question_problem(question)
    if problem is not None:
        raise CLIError(f"ask: {problem}")
    if at_cycle is None:
        async with redis_client(settings) as redis:
            events = await load_events(redis, settings.archive_dir, parent)
        ended = [e.cycle for e in events if isinstance(e, CycleEnded)]
        if not ended:
            raise CLIError(f"run {parent} has no ended cycle yet: ask once its first cycle ends")
        at_cycle = ended[-1]
    return await fork_run(
        settings,
        parent,
        at_cycle,
        model=model,
        pairs=(f"cycle_count={at_cycle + 1}",),  # the interview is the one next cycle
        child_id=child_id,
        out=out,
        follow=follow,
        wait_s=wait_s,
        question=question,
        verb="asked",
        id_suffix="ask",
    )


def cmd_queries(args: argparse.Namespace, settings: CLISettings) -> int:
    records = asyncio.run(run_queries(settings, args.run))
    if args.json:
        print_json([r.model_dump(mode="json") for r in records])
        return 0
    if not records:
        out(f'no query of run {args.run} yet: `contreact query {args.run} "QUESTION"`')
    for r in records:
        when = r.ts.strftime("%Y-%m-%d %H:%M")
        out(f"{when} {safe(r.by, 60, one_line=True)} asked {r.model} (up to cycle {r.cycle}):")
        out(f"  Q: {safe(r.question, 400, one_line=True)}")
        out(f"  A: {safe(r.answer, 2000, one_line=True)}")
    return 0


async def run_queries(settings: CLISettings, run: str) -> list[RunQueried]:
    """The run's query records (Redis, then its archive); an unknown run is one line."""
    async with redis_client(settings) as redis:
        if not await existing_runs(redis, settings.archive_dir, [run]):
            raise CLIError(
                f"no run '{run}' (neither in Redis nor archived): check `contreact runs`"
            )
        return (await queries.read_queries(redis, settings.archive_dir, [run]))[run]


def cmd_query(args: argparse.Namespace, settings: CLISettings) -> int:
    by = args.by or os.environ.get(BY_ENV) or getpass.getuser()
    record = asyncio.run(query(settings, args.run, args.question, by, args.model, args.wait))
    if args.json:
        print_json(record.model_dump(mode="json"))
        return 0
    out(
        f"run {record.run_id} queried ({record.model}, history up to cycle {record.cycle}, "
        f"input sha256 {record.input_sha256[:12]}); the answer, recorded beside the run:"
    )
    out(safe(record.answer, 20_000))
    return 0


async def query(
    settings: CLISettings,
    run: str,
    question: str,
    by: str,
    model: str | None = None,
    wait_s: float = 300.0,
) -> RunQueried:
    """Ask, record and return the answer to ``question`` about ``run``."""
    if not by.strip() or len(by) > 200 or "\n" in by:
        raise CLIError("query: say who asks, in one line of at most 200 characters (--by NAME)")
    if model is not None and (problem := model_problem(model)) is not None:
        raise CLIError(problem)
    async with redis_client(settings) as redis:
        events = await load_events(redis, settings.archive_dir, run)
        made = query_input(events, question)
        task = _task(made, run, model)
        await wait_for_services(redis, settings, min(wait_s, 60.0), ("llm-worker",))
        answered = await _ask(redis, made, task, wait_s)
        record = RunQueried(
            event_id=uuid.uuid4().hex,
            run_id=run,
            ts=datetime.now(UTC),
            correlation_id=run,
            causation_id=task.reply_to,
            question=question,
            by=by,
            model=task.model,
            model_ran=answered.model or task.model,
            backend=task.backend,
            host=task.host,
            options=task.options,
            input_sha256=made.input_sha256,
            run_events=made.run_events,
            run_digest=made.run_digest,
            state_shape=made.state_shape,
            cycle=made.cycle,
            answer=answered.message.content,
            thinking=answered.message.thinking,
            usage=answered.usage,
        )
        await queries.record(redis, record)
        await asyncio.to_thread(queries.append_archive, settings.archive_dir, run, [record])
        return record


def _task(made: QueryInput, run: str, model: str | None) -> LLMTask:
    """The chat call of the query: the run's backend, hosts and options; no tools."""
    state = made.state
    config = state.config
    if config is None or state.backend is None:
        raise CLIError(f"run {run} has no resolved backend (its model check did not pass)")
    asked = config if model is None else config.model_copy(update={"model_name": model})
    try:
        ev = evaluator_from_config(asked, state.backend)
    except BadEvaluator as exc:
        raise CLIError(str(exc)) from None
    return LLMTask(
        kind="chat",
        task_id="",
        run_id=run,
        backend=ev.backend,
        model=ev.model,
        host=ev.host,
        hosts=ev.hosts,
        api_key_env=ev.api_key_env,
        timeout_s=ev.timeout_s,
        connect_timeout_s=ev.connect_timeout_s,
        options=config.model_options.as_options(),
        keep_alive=ev.keep_alive,
        script=ev.script,
        messages=made.messages,
        max_content_chars=config.limits.llm_content_chars,
        reply_to=query_job_id(run, uuid.uuid4().hex[:12]),
    )


async def _ask(redis: aioredis.Redis, made: QueryInput, chat: LLMTask, wait_s: float) -> Any:
    """Check the model (is it there?), then ask; the ``LLMResponded``, or one line why not."""
    job = chat.reply_to
    assert job is not None
    deadline = datetime.now(UTC) + timedelta(seconds=wait_s)
    check = chat.model_copy(
        update={"kind": "check", "task_id": f"{job}/check", "messages": (), "deadline": deadline}
    )
    checked = await worker_call(redis, check, wait_s, None)
    if not isinstance(checked, ModelChecked):
        raise CLIError(_no_answer("the model check", wait_s))
    if not checked.ok:
        raise CLIError(f"model {chat.model} cannot answer the query: {checked.detail}")
    ask = chat.model_copy(update={"task_id": f"{job}/chat", "call_timeout_s": wait_s})
    answered = await worker_call(redis, ask, wait_s, wait_s)
    if isinstance(answered, LLMFailed):
        raise CLIError(f"model {chat.model} failed to answer the query: {answered.error}")
    if not isinstance(answered, LLMResponded):
        raise CLIError(_no_answer("the query", wait_s))
    return answered


def _no_answer(what: str, wait_s: float) -> str:
    return (
        f"no LLM worker answered {what} within {wait_s:.0f} s "
        "(is an llm-worker running? `contreact status`)"
    )
