"""The dashboard's HTTP surface: every JSON response validates against the OpenAPI
document (schemathesis, generated and on real runs), nothing but GET is routed, run ids
are checked on every path, no path reaches outside the store, and agent text comes out
as text."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from fastapi import FastAPI
from fastapi.routing import iter_route_contexts
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from starlette.requests import Request
from starlette.routing import Mount
from starlette.types import Message

from contreact_bus.archive import write_archive
from contreact_events.catalog.chat import AssistantMessage, ToolCall
from contreact_events.wire.codec import event_from_json
from contreact_ui.app import create_app
from contreact_ui.projection.follower import Notifier
from contreact_ui.projection.rebuild import rebuild
from contreact_ui.routes.service import changes
from contreact_ui.semantic import TextEmbedder
from contreact_ui.settings import UISettings
from tests.support import hostile
from tests.support.experiment_runs import ToyModel
from tests.support.sim import Sim, make_config

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
HOSTILE_RUN = "hostile-1"


def hostile_log() -> list[Any]:
    config = make_config(
        run_id=HOSTILE_RUN,
        cycle_count=2,
        diversity={"enabled": True},
        experiment="hostile-exp",  # (experiment names are identifiers now; the URL stays hostile)
    )
    replies = [
        AssistantMessage(
            content=r["content"].replace("{cycle}", "1"),
            tool_calls=tuple(ToolCall(**c) for c in r.get("tool_calls", ())),
        )
        for r in hostile.replies()
    ]
    sim = Sim(config)
    sim.drive(replies)
    return sim.log


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("ui-data")
    archive = data / "runs"
    archive.mkdir()
    for path in sorted(FIXTURES.glob("runlog-v*.jsonl")):
        run_id = event_from_json(path.read_bytes().splitlines()[0]).run_id
        shutil.copy(path, archive / f"{run_id}.events.jsonl")
    write_archive(archive, HOSTILE_RUN, hostile_log())
    report = asyncio.run(rebuild(data / "ui.db", None, archive))
    assert not report.problems and report.runs == len(list(FIXTURES.glob("runlog-v*.jsonl"))) + 1
    return data


@pytest.fixture(scope="module")
def app(data_dir: Path) -> FastAPI:
    app = create_app(UISettings(data_dir=data_dir, redis_url="redis://127.0.0.1:1/0"))
    app.state.embedder = TextEmbedder(ToyModel())  # semantic search without loading a model
    return app


@pytest.fixture(scope="module")
def client(app: FastAPI) -> Iterator[TestClient]:
    with TestClient(app) as test_client:
        yield test_client


@pytest.fixture(scope="module")
def api_schema(app: FastAPI) -> Any:
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    # A generated cycle or event number the run does not have is schema-valid, and this
    # API's documented answer to it is 400 ("a parameter names nothing that exists"):
    # the check of valid data accepts it (it failed on `replay.json?cycle=2574` once).
    schema.config.checks.positive_data_acceptance.expected_statuses.append("400")
    return schema


def test_generated_requests_get_documented_answers(api_schema: Any) -> None:
    """Every JSON operation, with parameters generated from its schema (schemathesis
    strategies driven by Hypothesis here: its lazy pytest loader does not run on this
    pytest), answers as documented: status, content type and body schema."""
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 13
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=15,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def check(case: Any) -> None:
            case.call_and_validate()

        check()


RUN_IDS = [
    "fixture-completed",
    "fixture-diversity",
    "fixture-regenerate",
    "fixture-v4-fork",
    HOSTILE_RUN,
]


@pytest.mark.parametrize("run_id", RUN_IDS)
def test_real_runs_validate_against_the_schema(api_schema: Any, run_id: str) -> None:
    operations = {
        "/runs/{run_id}.json": {},
        "/runs/{run_id}/memory.json": {},
        "/runs/{run_id}/events.json": {},
        "/runs/{run_id}/replay.json": {},
        "/runs/{run_id}/events/{seq}.json": {"seq": 3},
        "/runs/{run_id}/lineage.json": {},
    }
    for path, extra in operations.items():
        case = api_schema[path]["GET"].Case(path_parameters={"run_id": run_id, **extra})
        response = case.call_and_validate()
        assert response.status_code == 200, (path, response.text)
    for path, query in [
        ("/runs.json", {"status": "completed"}),
        ("/compare.json", {"run": RUN_IDS}),
        ("/compare.json", {"model": ["test-model"], "by": "run"}),
        ("/runs/{run_id}/replay.json", {"cycle": 1}),
        ("/runs/{run_id}/memory.json", {"cycle": 1}),
        ("/runs/{run_id}/events.json", {"type": ["LLMRequested", "LLMResponded"]}),
        ("/compose.json", {"model_name": "m", "cycle_count": "2"}),
        ("/health.json", {}),
    ]:
        operation = api_schema[path]["GET"]
        params = {"run_id": run_id} if "{run_id}" in path else {}
        response = operation.Case(path_parameters=params, query=query).call_and_validate()
        assert response.status_code == 200, (path, response.text)


def concrete_paths(app: FastAPI) -> list[str]:
    paths = []
    for context in iter_route_contexts(app.routes):  # the routers' routes, as served
        route = context.original_route
        path = context.path or ""
        if isinstance(route, Mount):
            path += "/app.js"
        if not path or path.startswith("/openapi"):
            continue
        path = path.replace("{run_id}", "fixture-completed").replace("{seq}", "2")
        paths.append(path.replace("{experiment}", "hostile-exp").replace("{name}", "hostile-exp"))
    return paths


def test_the_committed_openapi_document_is_current() -> None:
    from contreact_ui.schema import OPENAPI_PATH, document, render

    assert OPENAPI_PATH.read_text() == render(document()), (
        "the dashboard's API changed: run `make schema` and commit services/ui/openapi.json"
    )


def test_nothing_but_get_is_routed(app: FastAPI, client: TestClient) -> None:
    paths = concrete_paths(app)
    assert len(paths) >= 20
    for context in iter_route_contexts(app.routes):
        methods = context.methods or set()
        assert methods <= {"GET", "HEAD"}, (context.original_route, methods)
    for path in paths:
        if path != "/stream":  # an endless event stream: its GET is tested in the browser
            assert client.get(path).status_code == 200, path
        for method in ("POST", "PUT", "PATCH", "DELETE"):
            response = client.request(method, path)
            assert response.status_code == 405, (method, path, response.status_code)


@pytest.mark.parametrize(
    "bad",
    [
        "..%2F..%2Fetc%2Fpasswd",
        "%2e%2e",
        "%2E%2E%2Fui.db",
        ".hidden",
        "-dash",
        "a" * 129,
        "a%00b",
        "x%20y",
    ],
)
def test_run_ids_are_checked_on_every_path(client: TestClient, bad: str) -> None:
    for suffix in [
        "",
        ".json",
        "/memory",
        "/events",
        "/events.jsonl",
        "/export.jsonl",
        "/cycles.csv",
        "/replay.json",
        "/events/1",
    ]:
        response = client.get(f"/runs/{bad}{suffix}")
        assert response.status_code in (404, 422), (bad, suffix, response.status_code)
        assert "root:" not in response.text
    assert client.get(f"/stream?run={bad}").status_code in (400, 422)
    assert client.get(f"/compare.json?run={bad}").status_code in (400, 404, 422)


def test_static_files_stay_in_their_folder(client: TestClient) -> None:
    for path in ["/static/../app.py", "/static/..%2Fapp.py", "/static/%2e%2e/settings.py"]:
        response = client.get(path)
        assert response.status_code == 404 or "UISettings" not in response.text


def test_unknown_runs_and_positions_are_one_line_errors(client: TestClient) -> None:
    missing = client.get("/runs/no-such-run.json")
    assert missing.status_code == 404 and "no run 'no-such-run'" in missing.json()["detail"]
    page = client.get("/runs/no-such-run")
    assert page.status_code == 404 and "text/html" in page.headers["content-type"]
    beyond = client.get("/runs/fixture-completed/events/9999.json")
    assert beyond.status_code == 400 and "there is no event 9999" in beyond.json()["detail"]
    cycle = client.get("/runs/fixture-completed/replay.json?cycle=99")
    assert cycle.status_code == 400 and "no cycle 99" in cycle.json()["detail"]
    refused = client.get("/compose.yaml?cycle_count=zero&model_name=m")
    assert refused.status_code == 400 and "'zero' is not a whole number" in refused.text


def test_the_run_log_download_is_the_archive(client: TestClient) -> None:
    archived = (FIXTURES / "runlog-v1-completed.jsonl").read_bytes()
    served = client.get("/runs/fixture-completed/events.jsonl")
    assert served.status_code == 200 and served.content == archived
    assert served.headers["content-disposition"].startswith("attachment")


def test_long_listings_link_to_their_next_page(client: TestClient) -> None:
    events = client.get(
        "/runs/fixture-completed/events?limit=5&type=LLMRequested&type=LLMResponded"
    )
    assert events.status_code == 200
    assert re.search(r"type=LLMRequested&amp;type=LLMResponded&amp;after=\d+", events.text)
    runs = client.get("/runs?limit=2")
    assert runs.status_code == 200 and "offset=2" in runs.text


def test_plotly_comes_from_the_installed_package(client: TestClient) -> None:
    from importlib import resources

    served = client.get("/static/plotly.min.js")
    shipped = resources.files("plotly").joinpath("package_data", "plotly.min.js").read_bytes()
    assert served.status_code == 200 and served.content == shipped
    for page in ["/runs/fixture-diversity", "/compare"]:
        html = client.get(page).text
        sources = re.findall(r'<script[^>]*src="([^"]+)"', html)
        assert sources == ["/static/plotly.min.js", "/static/app.js"]
        assert "cdn" not in html.lower()


def test_agent_text_is_escaped_and_neutralized(client: TestClient) -> None:
    pages = [
        (f"/runs/{HOSTILE_RUN}", True),
        (f"/runs/{HOSTILE_RUN}/memory?cycle=1", True),
        (f"/runs/{HOSTILE_RUN}/events", True),
        (f"/runs/{HOSTILE_RUN}/replay", True),
        ("/runs?experiment=hostile-exp", False),
        ("/runs?experiment=exp%3Cscript%3E", False),  # a hostile query, echoed as text
        ("/compare?experiment=exp%3Cscript%3E", False),
    ]
    for page, shows_agent_text in pages:
        response = client.get(page)
        assert response.status_code == 200, page
        html = response.text
        for markup in hostile.MARKUP:
            assert markup not in html, (page, markup)
        assert "<script>" not in html.replace("<script src=", "").split("</head>")[-1], page
        assert "\x1b" not in html and "\u202e" not in html, page
        if shows_agent_text:
            assert "&lt;script&gt;" in html or "&lt;img" in html or "&lt;svg" in html, page
        policy = response.headers["content-security-policy"]
        assert "script-src 'self'" in policy and "unsafe-inline" not in policy.split("style-src")[0]
    detail = client.get(f"/runs/{HOSTILE_RUN}/events/1").text
    assert "<script>" not in detail.split('id="page-data">')[0]


def test_the_json_keeps_agent_text_exact(client: TestClient) -> None:
    memory = client.get(f"/runs/{HOSTILE_RUN}/memory.json?cycle=1").json()
    assert [(e["key"], e["value"]) for e in memory["entries"]] == [(hostile.HANDLER, hostile.VALUE)]


def test_the_stream_sends_the_rows_of_the_runs_that_changed(
    data_dir: Path, client: TestClient
) -> None:
    """``/stream``'s ``change`` event carries the changed runs' rows as the listing's
    JSON has them (only the runs asked for). Driven through the generator the route
    streams: Starlette's TestClient cannot read an endless response."""
    settings = UISettings(data_dir=data_dir, redis_url="redis://127.0.0.1:1/0")
    scope = {"type": "http", "method": "GET", "path": "/stream", "headers": []}

    async def connected() -> Message:
        await asyncio.sleep(3600)  # the client never leaves while we read
        return {"type": "http.disconnect"}

    async def read() -> tuple[str, str]:
        notifier = Notifier()
        events = changes(Request(scope, connected), notifier, {"fixture-completed"}, settings)
        hello = await anext(events)
        await notifier.publish(["fixture-completed", "fixture-diversity"])
        return hello, await anext(events)

    hello, change = asyncio.run(read())
    assert hello.startswith("retry: 2000\nevent: hello\n")
    name, data = change.strip().split("\n")
    assert name == "event: change"
    body = json.loads(data.removeprefix("data: "))
    listed = client.get("/runs.json", params={"q": "fixture-completed"}).json()["runs"]
    assert body == {"generation": 1, "everything": False, "runs": listed}


def test_a_forks_lineage_names_its_parent_what_changed_and_the_cycles_after(
    api_schema: Any, client: TestClient
) -> None:
    case = api_schema["/runs/{run_id}/lineage.json"]["GET"].Case(
        path_parameters={"run_id": "fixture-v4-fork"}
    )
    page = case.call_and_validate().json()
    assert page["parent_run_id"] == "fixture-v4-parent" and page["at_cycle"] == 2
    assert page["parent_shown"] is False  # the parent is not among the fixtures
    assert page["changes"] == [{"key": "model_name", "parent": "test-model", "fork": "other-model"}]
    assert [c["cycle"] for c in page["cycles"]] == [3, 4, 5, 6]
    assert all(c["parent"] is None and c["fork"] is not None for c in page["cycles"])
    assert 'href="/runs/fixture-v4-fork/lineage"' in client.get("/runs/fixture-v4-fork").text
    html = client.get("/runs/fixture-v4-fork/lineage").text
    assert "fixture-v4-parent" in html and "other-model" in html
    plain = client.get("/runs/fixture-completed/lineage.json").json()
    assert plain["parent_run_id"] is None and plain["cycles"] == []
    assert "is not a fork" in client.get("/runs/fixture-completed/lineage").text
