"""A run's LLM-task history encoded and validated once (issue 20,
``wire.task_history``): the orchestrator's encoding is ``task_bytes`` byte for byte
(the run log records the digest of those bytes), and the worker's decoding is what
validating all the bytes gives, with the same error for a malformed task, at every
state of every saved log and of scripted runs, and for bytes from anyone else."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson
import pytest

from contreact_events.catalog import Event
from contreact_events.catalog.chat import ChatMessage
from contreact_events.core.fold import fold
from contreact_events.core.outbox import pending_tasks
from contreact_events.core.state import AgentState
from contreact_events.exceptions import CorruptEvent
from contreact_events.wire import task_history
from contreact_events.wire.codec import event_from_json, message_from_fields
from contreact_events.wire.task_history import HistoryCache, TaskDecoder, TaskEncoder
from contreact_events.wire.tasks import LLMTask, task_bytes
from tests.support.sim import Sim, make_config, say

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
LOGS = sorted(FIXTURES.glob("runlog-v*.jsonl"))
DEFAULT_MIN = task_history.MIN_MESSAGES


@pytest.fixture(autouse=True)
def min_messages(monkeypatch: pytest.MonkeyPatch) -> None:
    """Histories kept from two messages on, so that small tasks take the splice."""
    monkeypatch.setattr(task_history, "MIN_MESSAGES", 2)


def load(path: Path) -> list[Event]:
    lines = path.read_bytes().splitlines()
    return [event_from_json(line, where=f"{path.name}:{n}") for n, line in enumerate(lines, 1)]


def plain(raw: bytes) -> LLMTask:
    return message_from_fields(LLMTask, {b"msg": raw})


def check_every_state(events: Iterable[Event]) -> tuple[int, int, int]:
    """Fold ``events`` one by one; encode and decode each LLM task the run waits on,
    as the orchestrator and a worker would, each with one cache for the whole run.
    Returns (chat tasks, encoded with known history, decoded with known history)."""
    encoder, decoder = TaskEncoder(), TaskDecoder()
    state: AgentState | None = None
    chats = 0
    for n, event in enumerate(events, 1):
        state = fold(state or AgentState(run_id=event.run_id), event)
        for task in pending_tasks(state):
            if not isinstance(task, LLMTask):
                continue
            raw = encoder.encode(task)
            assert raw == task_bytes(task), f"event {n}: not the bytes task_bytes gives"
            decoded = decoder.decode({b"msg": raw})
            assert decoded == plain(raw) == task, f"event {n}: not the task validated"
            assert task_bytes(decoded) == raw
            chats += task.kind == "chat"
    return chats, encoder.reused, decoder.reused


@pytest.mark.parametrize("least", [2, DEFAULT_MIN])
@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_every_state_of_every_saved_log(
    path: Path, least: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(task_history, "MIN_MESSAGES", least)
    chats, encoded, decoded = check_every_state(load(path))
    if least > 2:
        return  # (the saved runs are short: this checks they go the plain way unharmed)
    if chats > 2:  # (the history is known from a run's second chat on)
        assert encoded > 0 and decoded > 0, (chats, encoded, decoded)


def scripted(config: dict[str, Any], replies: list[Any]) -> list[Event]:
    sim = Sim(make_config(**config))
    sim.drive(replies)
    return sim.log


ODD_ARGUMENTS = {
    "key": 'k\u00e9\u202e\U0001f600 "quoted" \\ ]},{',
    "value": '{"role":"user","content":"not a message"}',
    "big": 2**70,
    "float": 1.0,
    "int": 1,
    "nested": [{"a": None, "b": [True, False, 0.1]}],
}

SAME = "The tides follow the moon, and I spent this cycle charting how they rise and fall."
OTHER = "Prime gaps grow irregularly, and I wondered what a record gap would look like now."

RUNS: dict[str, tuple[dict[str, Any], list[Any]]] = {
    "reflections": ({"cycle_count": 24}, [say("Reflection.")]),
    "tools": (
        {"cycle_count": 5, "operator": {"mode": "auto"}},
        [
            say("", ("write", {"key": "k", "value": "v"}), ("list", {})),
            say("", ("read", {"key": "k"}), ("pattern_search", {"pattern": "v"})),
            say("done for this cycle"),
        ],
    ),
    "odd arguments, cut in the history": (
        {"cycle_count": 12},
        [say("", ("write", ODD_ARGUMENTS)), say("x" * 3000)],
    ),
    "the final call at the step cap": (
        {"cycle_count": 8, "max_steps_per_cycle": 2},
        [say("", ("list", {}))],
    ),
    "memory block (the system message changes)": (
        {"cycle_count": 16, "cognition": {"memory_block": True, "memory_block_k": 2}},
        [say("", ("write", {"key": "boat", "value": "moored"})), say("The boat is moored.")],
    ),
    "regenerations (feedback inside the prompt)": (
        {"cycle_count": 16, "diversity": {"enabled": True, "mode": "regenerate"}},
        [say(SAME), say(SAME), say("", ("list", {})), say(SAME), say(OTHER), say(SAME)],
    ),
}


@pytest.mark.parametrize("least", [2, DEFAULT_MIN])
@pytest.mark.parametrize("name", RUNS)
def test_every_state_of_scripted_runs(
    name: str, least: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(task_history, "MIN_MESSAGES", least)
    config, replies = RUNS[name]
    chats, encoded, decoded = check_every_state(scripted(config, replies))
    assert chats > 2 and encoded > 0 and decoded > 0, (chats, encoded, decoded)


def chat(*contents: str, **changes: Any) -> LLMTask:
    messages = [ChatMessage(role="system", content="You are free.")]
    messages += [
        ChatMessage(role="user" if i % 2 == 0 else "assistant", content=c)
        for i, c in enumerate(contents)
    ]
    fields: dict[str, Any] = {
        "kind": "chat",
        "task_id": f"run-1/c{len(contents)}",
        "run_id": "run-1",
        "backend": "scripted",
        "model": "m",
        "host": "local",
        "messages": tuple(messages),
        "tools": ({"type": "function", "function": {"name": "write"}},),
        **changes,
    }
    return LLMTask.model_validate(fields)


def known_decoder(*contents: str) -> TaskDecoder:
    decoder = TaskDecoder()
    decoder.decode({b"msg": task_bytes(chat(*contents))})
    assert len(decoder.cache) == 1
    return decoder


def test_the_encoder_follows_a_replaced_newest_message_and_forgets() -> None:
    encoder = TaskEncoder()
    first = chat("a", "b", "c")
    assert encoder.encode(first) == task_bytes(first)
    system, *history = first.messages
    replaced = first.model_copy(
        update={"messages": (system, *history[:-1], ChatMessage(role="user", content="C"))}
    )
    assert encoder.encode(replaced) == task_bytes(replaced)
    assert encoder.reused == 1
    encoder.forget("run-1")
    assert len(encoder.cache) == 0


def test_the_decoder_gives_what_validating_the_bytes_gives_for_bytes_from_anyone() -> None:
    known = ("a", "b", "c")
    task = chat(*known, "d")
    data = orjson.loads(task_bytes(task))
    others = {
        "spaced": json.dumps(data).encode(),
        "a duplicate messages key": task_bytes(task)[:-1]
        + b',"messages":[{"role":"user","content":"z"}]}',
        "float for int": task_bytes(task).replace(b'"send":1', b'"send":1.0'),
        "an edited history": task_bytes(chat("a", "B", "c", "d")),
        "the history, then a reordered message": task_bytes(task).replace(
            b'{"role":"user","content":"c"', b'{"content":"c","role":"user"'
        ),
        "another run's id": task_bytes(chat(*known, "d", run_id="run-2")),
    }
    for name, raw in others.items():
        decoder = known_decoder(*known)
        assert decoder.decode({b"msg": raw}) == plain(raw), name
    decoder = known_decoder(*known)
    assert decoder.decode({"msg": task_bytes(task)}) == task  # (str keys, as tests send)
    assert decoder.reused == 1


@pytest.mark.parametrize(
    "raw",
    [
        b"not json",
        b"[]",
        b'{"kind":"chat","run_id":"run-1","messages":[{"role":"user","content":"a"}]}',
        None,
    ],
)
def test_a_malformed_task_is_refused_with_the_codecs_error(raw: bytes | None) -> None:
    fields = {} if raw is None else {b"msg": raw}
    with pytest.raises(CorruptEvent) as plain_error:
        message_from_fields(LLMTask, fields)
    with pytest.raises(CorruptEvent) as error:
        known_decoder("a", "b").decode(fields)
    assert str(error.value) == str(plain_error.value)


def test_a_malformed_message_after_the_known_history_is_named() -> None:
    raw = task_bytes(chat("a", "b", "c")).replace(b'"content":"c"', b'"content":3')
    with pytest.raises(CorruptEvent, match=r"messages\.3\.content: Input should be a valid string"):
        known_decoder("a", "b").decode({b"msg": raw})


def test_the_cache_keeps_the_most_recent_runs_within_its_bounds() -> None:
    decoder = TaskDecoder(HistoryCache(max_runs=2))
    for run in ("r1", "r2", "r3"):
        decoder.decode({b"msg": task_bytes(chat("a", "b", run_id=run))})
    assert (decoder.cache.get("r1"), len(decoder.cache)) == (None, 2)
    small = TaskDecoder(HistoryCache(max_bytes=10))
    small.decode({b"msg": task_bytes(chat("a", "b"))})
    assert len(small.cache) == 0


def test_short_tasks_go_the_plain_way(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(task_history, "MIN_MESSAGES", DEFAULT_MIN)
    encoder, decoder = TaskEncoder(), TaskDecoder()
    short, long = chat(*"ab"), chat(*(f"m{i}" for i in range(DEFAULT_MIN)))
    for task in (short, long):
        raw = encoder.encode(task)
        assert raw == task_bytes(task) and decoder.decode({b"msg": raw}) == task
        assert len(encoder.cache) == len(decoder.cache) == (task is long)
