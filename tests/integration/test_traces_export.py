"""The orchestrator's spans over OTLP/HTTP (issue 33), on real Redis with a real
orchestrator: what a receiver gets (decoded with OpenTelemetry's own protobuf
types), one trace per run across an orchestrator restart, and an endpoint that does
not answer costing the run nothing but one warning."""

from __future__ import annotations

import logging
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from contreact_bus.runs import load_events
from contreact_bus.traces import open_traces
from contreact_events.history.trace_spans import span_id_of, trace_id_of
from contreact_orchestrator.leases import release_owner
from tests.support.traced_runs import drive_run, free_port, orchestrator_with, otlp_sink

pytestmark = pytest.mark.redis

CYCLES = 3


def decoded(bodies: list[bytes]) -> list[dict[str, Any]]:
    """Every span the receiver got, from the OTLP requests' bodies."""
    out: list[dict[str, Any]] = []
    for body in bodies:
        for resource in ExportTraceServiceRequest.FromString(body).resource_spans:
            for scope in resource.scope_spans:
                out.extend(
                    {
                        "name": span.name,
                        "trace_id": int.from_bytes(span.trace_id, "big"),
                        "span_id": int.from_bytes(span.span_id, "big"),
                        "parent": int.from_bytes(span.parent_span_id, "big") or None,
                        "start": span.start_time_unix_nano,
                        "attributes": {a.key: a.value for a in span.attributes},
                    }
                    for span in scope.spans
                )
    return out


def ns(ts: datetime) -> int:
    return round(ts.timestamp() * 1e9)


async def test_one_run_is_one_trace_across_an_orchestrator_restart(
    aredis: aioredis.Redis, tmp_path: Path
) -> None:
    with otlp_sink() as (endpoint, bodies):
        first = open_traces(endpoint, "contreact-orchestrator")
        assert first is not None
        orchestrator = await orchestrator_with(aredis, tmp_path, first, "first")
        await drive_run(orchestrator, "traced", CYCLES, stop_after=9)  # within cycle 2
        first.close()
        await release_owner(aredis, "first", [0])  # as a supervisor does for a dead replica
        second = open_traces(endpoint, "contreact-orchestrator")
        assert second is not None
        restarted = await orchestrator_with(aredis, tmp_path, second, "second")
        await drive_run(restarted, "traced", CYCLES)
        second.close()
    spans = decoded(bodies)
    names = Counter(str(s["name"]) for s in spans)
    assert names["invoke_agent contreact"] == 1
    assert [names[f"cycle {c}"] for c in range(1, CYCLES + 1)] == [1] * CYCLES
    assert names["chat test-model"] == 2 * CYCLES
    assert names["execute_tool write"] == names["upsert_memory"] == CYCLES
    assert {s["trace_id"] for s in spans} == {trace_id_of("traced")}
    assert len({s["span_id"] for s in spans}) == len(spans)
    (root,) = [s for s in spans if s["parent"] is None]
    assert root["span_id"] == span_id_of("traced", "run")
    # Spans opened before the restart and ended after keep their recorded start.
    events = await load_events(aredis, tmp_path, "traced")
    assert root["start"] == ns(events[0].ts)
    cycle_2 = next(s for s in spans if s["name"] == "cycle 2")
    (started,) = [e for e in events if e.type == "CycleStarted" and e.cycle == 2]
    assert cycle_2["start"] == ns(started.ts)
    attributes = next(s for s in spans if s["name"] == "chat test-model")["attributes"]
    assert attributes["gen_ai.operation.name"].string_value == "chat"
    assert attributes["gen_ai.provider.name"].string_value == "scripted"
    assert attributes["gen_ai.conversation.id"].string_value == "traced"
    assert attributes["gen_ai.usage.input_tokens"].int_value == 100
    assert attributes["gen_ai.usage.output_tokens"].int_value == 20
    reasons = attributes["gen_ai.response.finish_reasons"].array_value.values
    assert [v.string_value for v in reasons] == ["stop"]


async def test_an_endpoint_that_does_not_answer_gives_one_warning(
    aredis: aioredis.Redis, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    traces = open_traces(dead, "contreact-orchestrator", timeout_s=1.0)
    assert traces is not None
    orchestrator = await orchestrator_with(aredis, tmp_path, traces, "dead-endpoint")
    for run in ("dead-1", "dead-2", "dead-3"):
        await drive_run(orchestrator, run, CYCLES)
        traces.flush()  # an export (and its retries) per run: three that fail
    traces.close()
    assert traces.failed_exports >= 3
    for run in ("dead-1", "dead-2", "dead-3"):  # every run went on to its end
        events = await load_events(aredis, tmp_path, run)
        assert events[-1].type == "RunCompleted"
    problems = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r.name for r in problems] == ["contreact_bus.traces"], [
        (r.name, r.getMessage()) for r in problems
    ]
    message = problems[0].getMessage()
    assert dead in message and "does not answer" in message and "said once" in message
