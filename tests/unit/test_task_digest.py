"""The digest a run's log records for its task (issue 20): SHA-256 of the task's bytes
as sent, checked by a worker on the bytes it received (no re-encoding of the whole
message list on either side); a task re-encoded, and one recorded with the canonical
digest of before, are still recognised; any other task is not."""

from __future__ import annotations

import hashlib

import orjson

from contreact_events.catalog.chat import ChatMessage
from contreact_events.wire.codec import message_from_fields, message_to_fields
from contreact_events.wire.tasks import (
    LLMTask,
    canonical_task_digest,
    digest_matches,
    digest_of,
    task_bytes,
    task_digest,
)


def chat(content: str = "Cycle 1 begins. \u00e9\u202e\U0001f600", **changes: object) -> LLMTask:
    fields: dict[str, object] = {
        "kind": "chat",
        "task_id": "run-1/c1/s1",
        "run_id": "run-1",
        "backend": "ollama",
        "model": "m",
        "host": "http://h:1",
        "messages": (
            ChatMessage(role="system", content="You are free."),
            ChatMessage(role="user", content=content),
        ),
        "tools": ({"type": "function", "function": {"name": "write", "big": 2**70}},),
        "options": {"temperature": 0.7, "seed": 3},
        **changes,
    }
    return LLMTask.model_validate(fields)


def test_the_digest_is_of_the_bytes_sent() -> None:
    task = chat()
    raw = message_to_fields(task)["msg"]
    assert raw == task_bytes(task)
    assert task_digest(task) == digest_of(raw) == hashlib.sha256(raw).hexdigest()


def test_a_worker_recognises_the_task_by_its_bytes_or_encoded_again() -> None:
    task = chat()
    raw = task_bytes(task)
    received = message_from_fields(LLMTask, {"msg": raw})
    assert digest_matches(task_digest(task), received, raw)
    assert digest_matches(task_digest(task), received)  # no bytes at hand: encoded again
    assert task_bytes(received) == raw  # (which is why that works)


def test_a_task_recorded_with_the_canonical_digest_of_before_is_still_taken() -> None:
    task = chat(tools=())  # (before, a tool integer past 64 bits made orjson refuse it)
    before = hashlib.sha256(
        orjson.dumps(task.model_dump(mode="json"), option=orjson.OPT_SORT_KEYS)
    ).hexdigest()
    assert canonical_task_digest(task) == before
    assert digest_matches(before, task, task_bytes(task))


def test_another_task_does_not_match() -> None:
    task, other = chat(), chat("Cycle 1 begins, but not the same.")
    for recorded in (task_digest(task), canonical_task_digest(task)):
        assert not digest_matches(recorded, other, task_bytes(other))
        assert not digest_matches(recorded, chat(send=2))
