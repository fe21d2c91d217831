"""A run's log as spans by the GenAI conventions (issue 33, ``history.trace_spans``):
the spans a scripted run gives, their ids derived from the run id alone, a log read
again after a restart continuing the same trace, and content only when switched on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from typing import Any

import pytest

from contreact_bus.traces import MISSING_EXTRA
from contreact_events.history.trace_spans import (
    SpanBuilder,
    SpanRecord,
    span_id_of,
    trace_id_of,
    traceparent,
)
from contreact_events.wire.tasks import LLMTask
from tests.support.sim import Sim, make_config, say

CYCLES = 3


def agent(task: LLMTask) -> Any:
    if task.step == 1:
        return say("", ("write", {"key": f"k{task.cycle}", "value": "secret note"}), ("list", {}))
    return say(f"Cycle {task.cycle}: I wrote a note.")


def run_log(run_id: str = "trace-run") -> Sim:
    sim = Sim(make_config(run_id=run_id, cycle_count=CYCLES))
    sim.drive([agent])
    assert sim.state.status == "completed"
    return sim


def spans(sim: Sim, *, capture: bool = False) -> list[SpanRecord]:
    return SpanBuilder(capture_content=capture).feed(sim.log)


def test_a_run_is_one_trace_with_the_conventions_spans() -> None:
    sim = run_log()
    got = spans(sim)
    names = Counter(s.name for s in got)
    model = sim.config.model_name
    assert names == {
        "invoke_agent contreact": 1,
        **{f"cycle {c}": 1 for c in range(1, CYCLES + 1)},
        f"chat {model}": 2 * CYCLES,
        "execute_tool write": CYCLES,
        "execute_tool list": CYCLES,
        "upsert_memory": CYCLES,
        "search_memory": CYCLES,
    }
    assert {s.trace_id for s in got} == {trace_id_of("trace-run")}
    by_id = {s.span_id: s for s in got}
    assert len(by_id) == len(got)  # no two spans share an id
    (root,) = [s for s in got if s.parent_id is None]
    assert root.name == "invoke_agent contreact" and root.error is None
    for span in got:  # every parent is a span of the trace, and holds its child's times
        if span.parent_id is not None:
            parent = by_id[span.parent_id]
            assert parent.start <= span.start <= span.end <= parent.end
    chat = next(s for s in got if s.name.startswith("chat "))
    assert by_id[chat.parent_id or 0].name.startswith("cycle ")
    assert chat.client
    attributes = chat.attributes
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["gen_ai.provider.name"] == "scripted"
    assert attributes["gen_ai.request.model"] == attributes["gen_ai.response.model"] == model
    assert attributes["gen_ai.usage.input_tokens"] == 10
    assert attributes["gen_ai.usage.output_tokens"] == 5
    assert attributes["gen_ai.conversation.id"] == "trace-run"
    tool = next(s for s in got if s.name == "execute_tool write")
    assert tool.attributes["gen_ai.tool.name"] == "write"
    assert tool.attributes["gen_ai.tool.call.id"] == tool.key
    memory = next(s for s in got if s.name == "upsert_memory")
    assert memory.parent_id == tool.span_id


def test_content_is_in_the_spans_only_when_switched_on() -> None:
    sim = run_log()
    off = json.dumps([s.attributes for s in spans(sim)])
    assert "secret note" not in off and "I wrote a note" not in off
    assert "gen_ai.output.messages" not in off and "gen_ai.system_instructions" not in off
    on = spans(sim, capture=True)
    write = next(s for s in on if s.name == "execute_tool write")
    assert json.loads(str(write.attributes["gen_ai.tool.call.arguments"]))["value"] == (
        "secret note"
    )
    last_chat = [s for s in on if s.name.startswith("chat ")][-1]
    (message,) = json.loads(str(last_chat.attributes["gen_ai.output.messages"]))
    assert message["role"] == "assistant"
    assert message["parts"] == [{"type": "text", "content": f"Cycle {CYCLES}: I wrote a note."}]


def test_a_log_read_again_continues_the_same_trace() -> None:
    """A restarted orchestrator learns the log so far (``reset``) and gives, for what is
    appended after, exactly the spans one process would have given."""
    sim = run_log()
    whole = spans(sim)
    for cut in (5, len(sim.log) // 2, len(sim.log) - 2):
        restarted = SpanBuilder()
        restarted.reset(sim.log[:cut])
        after = restarted.feed(sim.log[cut:])
        before = SpanBuilder().feed(sim.log[:cut])
        assert before + after == whole, cut
        assert restarted.open_runs() == []  # a finished run is forgotten


def test_ids_depend_on_the_run_id_alone() -> None:
    assert trace_id_of("a") == trace_id_of("a") != trace_id_of("b")
    assert span_id_of("a", "run") != span_id_of("a", "cycle/1")
    parent = traceparent("a")
    version, trace, span, flags = parent.split("-")
    assert (version, flags) == ("00", "01")
    assert int(trace, 16) == trace_id_of("a") and int(span, 16) == span_id_of("a", "run")
    # Another process (another hash seed) derives the same ids.
    code = "from contreact_events.history.trace_spans import traceparent; print(traceparent('a'))"
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert other.stdout.strip() == parent


def test_the_services_import_nothing_of_opentelemetry_without_an_endpoint() -> None:
    """The orchestrator and the trace mapping imported, the traces opened with no
    endpoint: no module of OpenTelemetry is loaded beyond what redis-py loads by itself
    (its ``redis.observability`` imports the SDK's metrics when it is installed)."""
    listing = "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))\n"
    ours = (
        "import sys\n"
        "import contreact_orchestrator.main, contreact_bus.traces\n"
        "from contreact_bus.traces import open_traces\n"
        "assert open_traces(None, 'x') is None\n"
    )
    redis_alone = "import sys\nimport redis.asyncio\n"

    def loaded(code: str) -> list[str]:
        run = subprocess.run([sys.executable, "-c", code + listing], capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        return list(json.loads(run.stdout.replace("'", '"')))

    mine = loaded(ours)
    assert mine == loaded(redis_alone)
    assert not [
        m for m in mine if m.startswith(("opentelemetry.exporter", "opentelemetry.sdk.trace"))
    ]


def test_an_endpoint_without_the_extra_is_refused_in_one_line() -> None:
    """The endpoint set, OpenTelemetry's exporter not importable (the extra not
    installed): the orchestrator exits with one line naming the problem and the fix."""
    code = (
        "import sys\n"
        "sys.modules['opentelemetry.exporter.otlp.proto.http.trace_exporter'] = None\n"
        "sys.argv = ['contreact-orchestrator']\n"
        "from contreact_orchestrator.main import main\n"
        "main()\n"
    )
    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert run.returncode == 1
    assert run.stderr.strip().splitlines()[-1] == f"contreact-orchestrator: {MISSING_EXTRA}"


def test_a_failed_send_that_is_retried_is_one_span_counting_it() -> None:
    sim = Sim(make_config(run_id="retried", cycle_count=1))
    sim.start()
    task = sim.task()
    sim.send("TaskFailed", task_id=task.task_id, cause="expired", reason="no answer in time")
    assert sim.task().task_id == task.task_id  # sent again
    sim.drive([agent])
    assert sim.state.status == "completed"
    got = spans(sim)
    first = next(s for s in got if s.key == task.task_id)
    assert first.error is None and first.attributes["contreact.failed_sends"] == 1
    assert first.start == next(e.ts for e in sim.log if e.type == "LLMRequested")
    assert len([s for s in got if s.key == task.task_id]) == 1


def test_a_failed_run_closes_every_span_it_opened() -> None:
    sim = Sim(make_config(run_id="failed", cycle_count=2))
    sim.start()
    task = sim.task()
    sim.send("LLMFailed", task.task_id, error="model not found", retryable=False, attempts=3)
    assert sim.state.terminal
    builder = SpanBuilder()
    got = builder.feed(sim.log)
    assert builder.open_runs() == []
    by_key = {s.key: s for s in got}
    assert by_key[task.task_id].error == "model not found"
    assert by_key[task.task_id].attributes["error.type"] == "LLMFailed"
    assert by_key["cycle/1"].error is not None  # ended by the run's end
    assert by_key["run"].error is not None and by_key["run"].parent_id is None
    assert {s.parent_id for s in got} <= {None, *(s.span_id for s in got)}


def test_spans_that_cannot_be_made_never_stop_a_run(caplog: pytest.LogCaptureFixture) -> None:
    """Whatever goes wrong in making the spans is said once; the orchestrator's append
    path (``written``, ``seen``) never raises."""
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    from contreact_bus.traces import RunTraces

    class Kept(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    class Broken(SpanBuilder):
        def feed(self, events: Any, *, emit: bool = True) -> list[SpanRecord]:
            raise ValueError("a bug")

    traces = RunTraces(Kept(), "test", capture_content=False)
    traces._builder = Broken()
    sim = run_log()
    traces.seen(sim.log)
    traces.written(sim.log[:3])
    traces.written(sim.log[3:])
    traces.close()
    warned = [r.getMessage() for r in caplog.records if r.name == "contreact_bus.traces"]
    assert warned == ["traces: spans could not be made (ValueError: a bug); runs go on"]
