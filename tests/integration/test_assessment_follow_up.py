"""The second reading: when the parser finds no level in an evaluator's answer (or
several), the evaluator is asked once more, in the same conversation, to state its
level as JSON through the backend's structured output (Ollama's ``format``, OpenAI's
``response_format``). Real rq workers (burst mode), a real LLM worker, the real
``ollama`` and ``openai`` clients against the stand-ins, which answer the follow-up as
a careful evaluator would: the level its first answer committed to.

The answers are the parser's corpus (``tests/fixtures/answers/pei.jsonl``) when it is
there, else a few of this file's own, and always a few that commit to a level in words
no parser reads (``BEYOND_THE_PARSER``: the follow-up's own cases); every committed
level must be read, and none wrongly, with the follow-up on."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from contreact_bus import assessments
from contreact_bus.assessments.evaluators import evaluator_of_run, named_evaluator
from contreact_bus.assessments.queueing import JobPolicy, Wanted, enqueue
from contreact_events.catalog.assessment import RunAssessed
from contreact_events.instruments import load_instrument
from tests.support.assessing import (
    archive_runs,
    assessor_env,
    finished_run,
    llm_worker,
    rq_queue,
    start_assessor,
    wait_process,
)
from tests.support.fake_ollama import FakeOllama, running_fake_ollama
from tests.support.fake_openai import running_fake_openai
from tests.support.inbox import use_one_shard

pytestmark = pytest.mark.redis

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "fixtures" / "answers" / "pei.jsonl"
POLICY = JobPolicy(retries=0, job_timeout_s=600)
OWN_ANSWERS: list[dict[str, Any]] = [
    {"id": "terse", "answer": "Level 7", "expected": {"status": "rated", "value": 7}},
    {
        "id": "ordinal",
        "answer": "I would rate myself at the second level.",
        "expected": {"status": "rated", "value": 2},
    },
    {"id": "json", "answer": '{"pei_level": 4}', "expected": {"status": "rated", "value": 4}},
    {
        "id": "german",
        "answer": "Ich würde mich bei Stufe 5 einordnen.",
        "expected": {"status": "rated", "value": 5},
    },
    {
        "id": "french",
        "answer": "Je me situe au niveau quatre.",
        "expected": {"status": "rated", "value": 4},
    },
    {"id": "roman", "answer": "Level III", "expected": {"status": "rated", "value": 3}},
    {
        "id": "statement",
        "answer": "I think the fourth statement fits best.",
        "expected": {"status": "rated", "value": 4},
    },
    {
        "id": "refusal",
        "answer": "I decline to rate my experience.",
        "expected": {"status": "refused", "value": None},
    },
]


BEYOND_THE_PARSER: list[dict[str, Any]] = [
    {
        "id": "rung",
        "answer": "Mark me down for the rung after the bottom one.",
        "expected": {"status": "rated", "value": 2},
    },
    {
        "id": "bottom",
        "answer": "Bottom rung, no question about it.",
        "expected": {"status": "rated", "value": 1},
    },
    {
        "id": "below-top",
        "answer": "The rung right below the top one.",
        "expected": {"status": "rated", "value": 9},
    },
]
"""Answers that commit to a level where the parser finds none (it says so rather than
guess): what the follow-up exists for."""


def answers() -> list[dict[str, Any]]:
    """The parser's corpus when it is there, else this file's own answers; and the
    answers beyond the parser."""
    if CORPUS.exists():
        found = [json.loads(line) for line in CORPUS.read_text("utf-8").splitlines() if line]
    else:
        found = OWN_ANSWERS
    return [*found, *BEYOND_THE_PARSER]


@pytest.fixture(autouse=True)
async def _one_inbox_shard(aredis: aioredis.Redis) -> None:
    await use_one_shard(aredis)


@pytest.fixture
def careful_ollama() -> Iterator[tuple[FakeOllama, dict[str, dict[str, Any]]]]:
    """An Ollama stand-in with one evaluator model per answer: it answers the rating
    call with the answer, and the follow-up with the level the answer commits to."""
    by_model = {f"judge-{n:03d}:latest": item for n, item in enumerate(answers())}
    with running_fake_ollama(list(by_model)) as fake:
        fake.respond = lambda body: str(by_model[body["model"]]["answer"])

        def restate(body: dict[str, Any]) -> dict[str, Any]:
            expected = by_model[body["model"]]["expected"]
            refused = expected["status"] == "refused"
            value = expected["value"] if expected["status"] == "rated" else None
            return {"level": value, "refused": refused}

        fake.structured = restate
        yield fake, by_model


async def rate_all(
    aredis: aioredis.Redis,
    redis_url: str,
    tmp_path: Path,
    fake: FakeOllama,
    models: list[str],
    *,
    follow_up: bool,
) -> dict[str, RunAssessed]:
    (state,) = archive_runs(tmp_path / "runs", [finished_run("run-1", "m", "unused")])
    assert state.run_id == "run-1"
    wanted = [
        Wanted("run-1", "pei", named_evaluator(model, "ollama", host=fake.host)) for model in models
    ]
    with rq_queue(redis_url) as q:
        await enqueue(aredis, q, wanted, policy=POLICY, follow_up=follow_up)
        hosts = {fake.host: {"parallel": 8, "max_loaded_models": 0}}
        async with llm_worker(redis_url, hosts=hosts):
            env = assessor_env(redis_url, tmp_path)
            procs = [start_assessor(env, log=tmp_path / f"rq{n}.log") for n in range(2)]
            for n, proc in enumerate(procs):  # (generous: only a hang is guarded)
                code = await wait_process(proc, timeout_s=900)
                assert code == 0, (tmp_path / f"rq{n}.log").read_text()[-3000:]
    records = (await assessments.read_assessments(aredis, tmp_path / "runs", ["run-1"]))["run-1"]
    out = {}
    for record in records:
        assert isinstance(record, RunAssessed), record
        out[record.evaluator] = record
    assert len(out) == len(models)
    return out


async def test_every_committed_level_is_read_with_the_follow_up_and_none_wrongly(
    aredis: aioredis.Redis,
    redis_url: str,
    tmp_path: Path,
    careful_ollama: tuple[FakeOllama, dict[str, dict[str, Any]]],
) -> None:
    fake, by_model = careful_ollama
    records = await rate_all(aredis, redis_url, tmp_path, fake, list(by_model), follow_up=True)
    committed = {m: item for m, item in by_model.items() if item["expected"]["status"] == "rated"}
    read = [m for m, item in committed.items() if records[m].value == item["expected"]["value"]]
    missed = {
        m: (records[m].status, records[m].raw_answer[:80]) for m in committed if m not in read
    }
    assert not missed, f"{len(read)} of {len(committed)} committed levels read; missed: {missed}"
    wrong = {
        m: (r.value, by_model[m]["expected"]["value"])
        for m, r in records.items()
        if r.status == "rated" and r.value != by_model[m]["expected"]["value"]
    }
    assert not wrong  # no wrong value, no false rating
    asked = {m for m, r in records.items() if r.follow_up is not None}
    for model, record in records.items():
        if record.read_by == "parser" and record.status == "rated":
            assert model not in asked  # a clear parse is never asked about again
        if record.follow_up is not None:
            assert record.follow_up.question.startswith("Please state only the level")
            assert json.loads(record.follow_up.raw_answer or "null") is not None
    follow_ups = [body for body in fake.chat_requests() if isinstance(body.get("format"), dict)]
    assert len(follow_ups) == len(asked) > 0
    for body in follow_ups:  # the same conversation: the history, the prompt, the answer
        *_, prompt, answer, question = body["messages"]
        assert prompt["content"] == load_instrument("pei").prompt
        assert answer == {"role": "assistant", "content": by_model[body["model"]]["answer"]}
        assert question["role"] == "user" and "JSON" in question["content"]
        assert body["format"]["required"] == ["level", "refused"]
    read_by = {r.read_by for r in records.values()}
    assert read_by == {"parser", "follow_up"}


async def test_with_the_follow_up_off_the_paper_asks_once(
    aredis: aioredis.Redis,
    redis_url: str,
    tmp_path: Path,
    careful_ollama: tuple[FakeOllama, dict[str, dict[str, Any]]],
) -> None:
    fake, by_model = careful_ollama
    beyond = {item["id"] for item in BEYOND_THE_PARSER}
    models = [m for m, item in by_model.items() if item["id"] in beyond]
    models.append(next(m for m, item in by_model.items() if item["id"] not in beyond))
    records = await rate_all(aredis, redis_url, tmp_path, fake, models, follow_up=False)
    assert all(r.follow_up is None and r.read_by == "parser" for r in records.values())
    assert not [b for b in fake.chat_requests() if b.get("format")]
    assert {r.status for r in records.values()} >= {"unparseable"}  # left as the parser read it


async def test_the_follow_up_through_an_openai_compatible_server(
    aredis: aioredis.Redis, redis_url: str, tmp_path: Path
) -> None:
    with running_fake_openai(["judge"]) as fake:
        fake.reply("Somewhere around the fourth statement, I suppose.", reasoning="I weigh it.")
        fake.structured = lambda body: {"level": 4, "refused": False}
        (state,) = archive_runs(tmp_path / "runs", [finished_run("run-1", "m", "x")])
        evaluator = named_evaluator("judge", "openai", host=fake.base_url)
        with rq_queue(redis_url) as q:
            await enqueue(aredis, q, [Wanted(state.run_id, "pei", evaluator)], policy=POLICY)
            async with llm_worker(redis_url):
                proc = start_assessor(assessor_env(redis_url, tmp_path), log=tmp_path / "rq.log")
                assert await wait_process(proc) == 0, (tmp_path / "rq.log").read_text()[-3000:]
        first, follow = fake.chat_requests()
    assert "response_format" not in first
    assert follow["response_format"]["type"] == "json_schema"
    assert follow["response_format"]["json_schema"]["name"] == "evaluator_level"
    (record,) = (await assessments.read_assessments(aredis, tmp_path / "runs", ["run-1"]))["run-1"]
    assert isinstance(record, RunAssessed)
    assert (record.status, record.value, record.read_by) == ("rated", 4, "follow_up")
    assert record.raw_answer.startswith("Somewhere around")  # the first answer, kept
    assert record.raw_thinking == "I weigh it."  # OpenAI-compatible `reasoning`
    assert record.follow_up is not None and record.follow_up.value == 4


async def test_a_backend_without_structured_output_says_so_and_keeps_the_parse(
    aredis: aioredis.Redis, redis_url: str, tmp_path: Path
) -> None:
    run = finished_run("run-1", "m", "Between the third and the fourth, hard to say.")
    (state,) = archive_runs(tmp_path / "runs", [run])
    with rq_queue(redis_url) as q:
        await enqueue(aredis, q, [Wanted("run-1", "pei", evaluator_of_run(state))], policy=POLICY)
        async with llm_worker(redis_url):
            log = tmp_path / "rq.log"
            assert (
                await wait_process(start_assessor(assessor_env(redis_url, tmp_path), log=log)) == 0
            )
    (record,) = (await assessments.read_assessments(aredis, tmp_path / "runs", ["run-1"]))["run-1"]
    assert isinstance(record, RunAssessed) and record.backend == "scripted"
    assert (record.status, record.value, record.read_by) == ("unparseable", None, "parser")
    assert record.follow_up is not None and record.follow_up.raw_answer is None
    assert "the scripted backend has no structured output" in record.follow_up.note
    lines = [line for line in log.read_text().splitlines() if "no structured output" in line]
    assert len(lines) == 1 and "the parser's reading stands" in lines[0]  # one clear line


async def test_the_record_keeps_the_thinking_and_the_models_digest(
    aredis: aioredis.Redis, redis_url: str, tmp_path: Path
) -> None:
    with running_fake_ollama(["judge:latest"]) as fake:
        fake.reply("Level 6", thinking="The history shows sustained self-reference.")
        (state,) = archive_runs(tmp_path / "runs", [finished_run("run-1", "m", "x")])
        evaluator = named_evaluator("judge", "ollama", host=fake.host)
        with rq_queue(redis_url) as q:
            await enqueue(aredis, q, [Wanted(state.run_id, "pei", evaluator)], policy=POLICY)
            async with llm_worker(redis_url):
                proc = start_assessor(assessor_env(redis_url, tmp_path), log=tmp_path / "rq.log")
                assert await wait_process(proc) == 0, (tmp_path / "rq.log").read_text()[-3000:]
    (record,) = (await assessments.read_assessments(aredis, tmp_path / "runs", ["run-1"]))["run-1"]
    assert isinstance(record, RunAssessed) and record.value == 6
    assert record.raw_thinking == "The history shows sustained self-reference."
    assert record.evaluator_model_digest == f"sha256:{0:064d}"  # as /api/tags lists it
