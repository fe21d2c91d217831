"""Interviews in the pure core (issue 31): ``contreact ask`` is a fork whose first
cycle opens with the researcher's question (logged in ``RunForked``, built into the
history by the fold, marked in the export, replayed exactly); ``contreact query``'s
input is the history exactly as the agent last saw it, then the question, pinned by
its hash, and rebuilt from the log alone."""

from __future__ import annotations

import pytest

from contreact_events.catalog import EVENT_ADAPTER, upcast
from contreact_events.catalog.chat import AssistantMessage, ChatMessage
from contreact_events.catalog.cycle import LLMRequested
from contreact_events.catalog.fork import RunForked
from contreact_events.catalog.query import MAX_QUESTION_CHARS, RunQueried
from contreact_events.core.fold import fold_all
from contreact_events.core.prompt import offered_tools_now, sha256_of_prompt
from contreact_events.core.researcher import researcher_turn
from contreact_events.exceptions import ForkRefused, NotQueryable
from contreact_events.history.export import export_records
from contreact_events.history.interview import query_input, query_problem
from contreact_events.history.replay import replay_check
from contreact_events.wire.codec import event_from_json, event_to_json
from contreact_events.wire.tasks import LLMTask
from tests.support.fork_sim import ForkSim
from tests.support.sim import T0, Sim, make_config, say

QUESTION = "What do you remember of cycle 2, and why did you keep it?"


def parent_run(cycles: int = 3) -> Sim:
    sim = Sim(make_config(run_id="parent", cycle_count=cycles))

    def script(task: LLMTask) -> AssistantMessage:
        if task.step == 1 and task.cycle == 2:
            return say("", ("write", {"key": "plan", "value": "kept in cycle 2"}))
        return say(f"reflection of cycle {task.cycle}")

    sim.drive([script])
    assert sim.state.status == "completed"
    return sim


def test_ask_opens_the_forks_first_cycle_with_the_question_and_replays() -> None:
    parent = parent_run()
    before = list(parent.log)
    child = ForkSim(parent.log, "child", 3, settings=["cycle_count=4"], question=QUESTION)
    sent: list[LLMTask] = []

    def answer(task: LLMTask) -> AssistantMessage:
        sent.append(task)
        return say("I kept the plan because it was the first thing I wrote down.")

    child.drive([answer])
    assert parent.log == before  # the parent never changes
    assert child.state.status == "completed" and child.state.cycle_number == 4
    forked = next(e for e in child.log if isinstance(e, RunForked))
    assert forked.question == QUESTION
    # Cycle 4 opens with its opening message, then the researcher's turn; nothing after.
    (first,) = sent
    assert first.cycle == 4
    assert first.messages[-1] == ChatMessage(role="user", content=researcher_turn(QUESTION))
    assert first.messages[-2].role == "user" and "4" in first.messages[-2].content
    assert QUESTION in first.messages[-1].content
    assert first.messages[-1].content.startswith("RESEARCHER QUESTION")
    assert child.state.researcher_question == ""  # used once
    # The log replays exactly (every prompt hash), survives the codec, and exports the mark.
    log = [event_from_json(event_to_json(e)) for e in child.log]
    report = replay_check(log)
    assert report.ok, report.divergence and report.divergence.describe()
    starts = [r for r in export_records(log) if r["event_type"] == "CYCLE_START"]
    marked = [r for r in starts if "researcher_question" in r["payload"]]
    assert [(r["cycle_number"], r["payload"]["researcher_question"]) for r in marked] == [
        (4, QUESTION)
    ]


def test_a_fork_recorded_before_questions_reads_as_one_without() -> None:
    parent = parent_run()
    child = ForkSim(parent.log, "child", 3, settings=["cycle_count=4"])
    forked = next(e for e in child.log if isinstance(e, RunForked))
    stored = forked.model_dump(mode="json")
    del stored["question"]
    stored["schema_version"] = 2
    old = EVENT_ADAPTER.validate_python(upcast(stored))
    assert isinstance(old, RunForked) and old.question == "" and old.schema_version == 3


@pytest.mark.parametrize(
    ("question", "words"),
    [("   ", "the question is empty"), ("x" * (MAX_QUESTION_CHARS + 1), "over the cap of 4000")],
)
def test_a_question_that_cannot_be_asked_is_refused_with_one_line(
    question: str, words: str
) -> None:
    parent = parent_run()
    with pytest.raises(ForkRefused) as refused:
        ForkSim(parent.log, "child", 3, settings=["cycle_count=4"], question=question)
    assert words in str(refused.value) and "\n" not in str(refused.value)
    with pytest.raises(NotQueryable) as not_asked:
        query_input(parent.log, question)
    assert words in str(not_asked.value) and "\n" not in str(not_asked.value)


def test_the_query_input_is_the_history_as_the_agent_last_saw_it_then_the_question() -> None:
    parent = parent_run()
    made = query_input(parent.log, QUESTION)
    last_call = max(i for i, e in enumerate(parent.log) if isinstance(e, LLMRequested))
    recorded = parent.log[last_call]
    assert isinstance(recorded, LLMRequested)
    # The first messages are exactly the last call's prompt: its recorded hash.
    before = fold_all(parent.log[:last_call])
    tools = offered_tools_now(before)
    sent = len(before.message_history) + 1
    assert sha256_of_prompt(made.messages[:sent], tools) == recorded.prompt_sha256
    # Then the agent's answer to it, then the question; no tools.
    assert made.messages[sent].role == "assistant"
    assert made.messages[sent].content == "reflection of cycle 3"
    assert made.messages[-1] == ChatMessage(role="user", content=QUESTION)
    assert len(made.messages) == sent + 2
    assert made.input_sha256 == sha256_of_prompt(made.messages, ())
    assert made.cycle == 3
    # A record of it is checked against the log: the same log passes, another fails.
    record = RunQueried(
        event_id="q1",
        run_id="parent",
        ts=T0,
        correlation_id="parent",
        question=QUESTION,
        by="tester",
        model="test-model",
        backend="scripted",
        input_sha256=made.input_sha256,
        run_events=made.run_events,
        run_digest=made.run_digest,
        state_shape=made.state_shape,
        cycle=made.cycle,
        answer="an answer",
    )
    assert query_problem(parent.log, record) is None
    other = parent_run(cycles=4)
    problem = query_problem(other.log, record)
    assert problem is not None and "differs" in problem


def test_a_run_whose_model_never_answered_cannot_be_queried() -> None:
    sim = Sim(make_config(run_id="fresh", cycle_count=2))
    sim.start()
    with pytest.raises(NotQueryable, match="has not answered yet"):
        query_input(sim.log, QUESTION)


def test_the_report_marks_the_cycle_an_interview_opened() -> None:
    """The report shows where a researcher's question came in: the fork's cycle K+1,
    the question as text (escaped: a researcher's words are text like the agent's);
    the dataframes carry it (``runs.researcher_question``)."""

    from contreact_analysis.frames import build_frames
    from contreact_analysis.report import build_report, render_report

    parent = parent_run()
    asked = QUESTION + " <b>and</b>"
    child = ForkSim(parent.log, "child", 3, settings=["cycle_count=4"], question=asked)
    child.drive([lambda task: say("I kept the plan.")])
    frames = build_frames({"parent": parent.log, "child": child.log})
    runs = frames.runs.set_index("run_id")
    assert runs.loc["child", "researcher_question"] == asked
    assert runs["researcher_question"].isna().to_dict() == {"child": False, "parent": True}
    html = render_report(build_report(frames, title="t", command="c", resamples=99))
    assert html.count('class="researcher-question"') == 1
    at = html.index('<p class="researcher-question"')
    assert html[:at].rstrip().endswith("<h4>Cycle 4</h4>")  # the cycle it opened
    assert "&lt;b&gt;and&lt;/b&gt;" in html[at:].split("</pre>")[0]
