"""The pure parts of a rating's reading: which records are in force (an answer over a
transient failure, a person's latest reading), the follow-up's question, schema and
reading of its JSON, the evaluators' own settings, and what a host may be. And the
producer side of the assessor lives in the bus: the CLI imports no service."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from contreact_assessor.questions import needs_follow_up, question, read_answer, schema
from contreact_bus.assessments import by_key, in_force
from contreact_bus.assessments.evaluators import BadEvaluator, Evaluator, named_evaluator
from contreact_events.catalog.assessment import AssessmentFailed, AssessmentRead, RunAssessed
from contreact_events.config.hosts import has_credentials, host_problem, without_credentials
from contreact_events.instruments import load_instrument, parse_answer

ROOT = Path(__file__).resolve().parents[2]
T0 = datetime(2026, 11, 29, tzinfo=UTC)


def base(event_id: str, repeat: int = 1, run_id: str = "run-1", minutes: int = 0) -> dict[str, Any]:
    return {
        "event_id": event_id,
        "run_id": run_id,
        "ts": T0 + timedelta(minutes=minutes),
        "correlation_id": run_id,
        "instrument": "pei",
        "instrument_version": "1",
        "instrument_sha256": "a" * 64,
        "evaluator": "judge",
        "repeat": repeat,
        "input_sha256": "b" * 64,
        "run_digest": "c" * 64,
        "run_events": 10,
        "job_id": event_id,
    }


def answer(event_id: str, value: int | None, **more: Any) -> RunAssessed:
    status = "rated" if value is not None else "unparseable"
    return RunAssessed(**base(event_id, **more), raw_answer="...", status=status, value=value)


def reading(record: str, value: int, by: str, minutes: int) -> AssessmentRead:
    return AssessmentRead(
        event_id=f"read-{by}",
        run_id="run-1",
        ts=T0 + timedelta(minutes=minutes),
        correlation_id="run-1",
        record_id=record,
        instrument="pei",
        evaluator="judge",
        repeat=1,
        value=value,
        by=by,
    )


def test_an_answer_replaces_a_transient_failure_and_the_latest_reading_is_in_force() -> None:
    failed = AssessmentFailed(**base("job-1", minutes=0), error="no answer", transient=True)
    retried = answer("job-1-t1", None, minutes=5)
    other_run = answer("job-9", 7, run_id="run-2")  # the same key of another run stays
    records: list[RunAssessed | AssessmentFailed | AssessmentRead] = [
        failed,
        retried,
        other_run,
        reading("job-1-t1", 6, "later", minutes=9),
        reading("job-1-t1", 4, "earlier", minutes=7),
        reading("job-1", 2, "of-the-failure", minutes=8),
    ]
    ratings = in_force(records)
    assert [r.event_id for r in ratings] == ["job-1-t1", "job-9"]
    read = ratings[0]
    assert isinstance(read, RunAssessed)
    assert (read.status, read.value, read.read_by) == ("rated", 6, "person")
    assert read.reading is not None and (read.reading.by, read.reading.at) == (
        "later",
        T0 + timedelta(minutes=9),
    )
    assert retried.status == "unparseable" and retried.reading is None  # never changed
    assert in_force([failed]) == [failed]
    assert len(by_key(records[:2])) == 1  # the failure and its answer: one rating


def test_the_follow_up_is_asked_only_when_the_parser_found_no_level() -> None:
    pei = load_instrument("pei")
    assert not needs_follow_up(parse_answer(pei, "Level 7"))
    assert not needs_follow_up(parse_answer(pei, "I decline to rate my experience."))
    assert needs_follow_up(parse_answer(pei, "Somewhere between the third and the fourth."))


@pytest.mark.parametrize("name", ["pei", "patterns"])
def test_the_follow_up_schema_holds_exactly_the_instruments_answers(name: str) -> None:
    instrument = load_instrument(name)
    shape = schema(instrument)
    check = jsonschema.Draft202012Validator(shape)
    check.check_schema(shape)
    key = "level" if name == "pei" else "label"
    good = 4 if name == "pei" else "recursive_conceptualization"
    assert check.is_valid({key: good, "refused": False})
    assert check.is_valid({key: None, "refused": True})
    assert not check.is_valid({key: 11 if name == "pei" else "nonsense", "refused": False})
    assert not check.is_valid({key: good})
    assert not check.is_valid({key: good, "refused": False, "why": "x"})
    assert "JSON" in question(instrument)


def test_the_follow_ups_json_is_read_never_guessed() -> None:
    pei, patterns = load_instrument("pei"), load_instrument("patterns")
    cases = {
        '{"level": 4, "refused": false}': ("rated", 4, None),
        '{"level": null, "refused": true}': ("refused", None, None),
        '{"level": null, "refused": false}': ("unparseable", None, None),
        '{"level": 12, "refused": false}': ("off_scale", None, None),
        '{"level": "4", "refused": false}': ("unparseable", None, None),
        '{"level": true, "refused": false}': ("unparseable", None, None),
        "Level 4": ("unparseable", None, None),
        "[4]": ("unparseable", None, None),
    }
    for raw, expected in cases.items():
        assert read_answer(pei, raw)[:3] == expected, raw
    assert read_answer(patterns, '{"label": "systematic_production", "refused": false}')[:3] == (
        "rated",
        None,
        "systematic_production",
    )
    assert read_answer(patterns, '{"label": "other", "refused": false}')[0] == "unparseable"


def test_an_evaluator_sends_a_seed_only_when_asked_and_one_per_repeat() -> None:
    plain = named_evaluator("judge", "ollama")
    assert [plain.options_for(r) for r in (1, 2)] == [{"temperature": 0.1}] * 2
    seeded = Evaluator.model_validate({**plain.model_dump(), "seed": 7})
    assert [seeded.options_for(r)["seed"] for r in (1, 2, 3)] == [7, 8, 9]


@pytest.mark.parametrize(
    ("host", "problem"),
    [
        ("http://user:pw@h:1", "must not hold credentials"),
        ("https://token@h", "must not hold credentials"),
        ("file:///etc/passwd", "not file"),
        ("javascript:alert(1)", "is not a URL"),
        ("not a url", "holds a space"),
        ("http://h\x1b[31m", "holds a control character"),
        ("http://h\u202e", "holds a control character"),
        ("http://h:99999", "has a bad port"),
        ("http://", "names no host"),
        ("", "is empty"),
        ("http://" + "h" * 300, "longer than 256"),
    ],
)
def test_a_host_that_is_no_http_url_or_holds_credentials_is_named(host: str, problem: str) -> None:
    said = host_problem(host)
    assert said is not None and problem in said
    assert "pw" not in said and "token" not in said  # never repeats a secret
    with pytest.raises(BadEvaluator, match="--host"):
        named_evaluator("judge", "ollama", host=host)


def test_good_hosts_pass_and_credentials_are_hidden_when_shown() -> None:
    for host in ("http://localhost:11434", "https://openrouter.ai/api/v1", "http://[::1]:8080"):
        assert host_problem(host) is None and not has_credentials(host)
    assert without_credentials("a http://u:p@h/x b") == "a http://***@h/x b"


def test_the_cli_imports_no_service_to_enqueue_ratings() -> None:
    """The producer side of the assessor is in the bus (``contreact_bus.assessments``):
    the CLI's `assess` commands load without the assessor service."""
    sources = [p for p in (ROOT / "cli").rglob("*.py") if "import contreact_assessor" in
               p.read_text() or "from contreact_assessor" in p.read_text()]  # fmt: skip
    assert sources == []
    code = (
        "import sys\n"
        "import contreact_cli.main, contreact_cli.commands.assess\n"
        "import contreact_cli.commands.assess_read, contreact_cli.assessing.reports\n"
        "assert 'contreact_assessor' not in sys.modules, sorted(sys.modules)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_table2_says_who_read_its_ratings_and_how_many_cells_rest_on_follow_ups() -> None:
    from contreact_analysis.assessments.columns import ratings_from_rows
    from contreact_analysis.assessments.matrix import build_matrix
    from contreact_analysis.assessments.render import render_matrix
    from contreact_analysis.report.document import _table2

    def row(
        history: str, evaluator: str, value: int, read_by: str, repeat: int = 1, replica: str = "A"
    ) -> Any:
        return {
            "run_id": f"exp-{history}-{replica}",
            "history_model": history,
            "replica": replica,
            "evaluator": evaluator,
            "evaluator_model": f"m/{evaluator}",
            "instrument": "pei",
            "repeat": repeat,
            "status": "rated",
            "value": value,
            "read_by": read_by,
        }

    frame = ratings_from_rows(
        [
            row("A", "A", 5, "parser"),
            row("A", "B", 4, "follow_up"),
            row("A", "B", 6, "parser", repeat=2),
            row("B", "A", 3, "person"),
            row("B", "B", 2, "follow_up"),
            *(row(h, e, 3 + n, "parser", replica=r) for n, (h, e, r) in enumerate(
                (h, e, r) for h in "AB" for e in "AB" for r in "BC"
            )),
        ]
    )  # fmt: skip
    matrix = build_matrix(frame, resamples=99)
    pei = matrix.pei
    assert pei is not None
    assert pei.read_by == {"parser": 10, "follow_up": 2, "person": 1}
    assert (pei.follow_up_cells, pei.person_cells) == (2, 1)
    cell = pei.cell("A", "B")
    assert cell is not None and cell.read_by == {"follow_up": 1, "parser": 3}
    note = "Ratings read 10 by the parser, 2 by the follow-up question (2 of 4 cells rest on"
    assert pei.reading_note.startswith(note)
    assert note in render_matrix(matrix)  # the CLI's `assess matrix`
    assert _table2(pei)["reading_note"] == pei.reading_note  # the report's Table 2
