"""`docker compose up` on a real engine: the images built offline on the local base,
Ollama replaced by the project's stand-in (a container), the dashboard published on a
free port. One experiment file (2 models x 2 replicas) goes through the CLI container:
`models check` and `models pull` of the file (each model pulled once, not once per
run), then one `contreact experiment run`; a worker and an orchestrator are killed
mid-run. Every run completes with its cycle count, its rebuilt state equal to the live
one; the dashboard's JSON lists the runs completed with their cycles and a run's HTML
page renders, from the host. After `docker compose down` and `up` the volumes still
hold the runs, the memory, the experiment's record (submitting the file again sends
nothing) and the dashboard's store (the same ui.db, not a rebuilt one). Redis runs with
a password (REDIS_PASSWORD): it refuses a client without it, every service, health
check and the cli get it through compose, and no container's log shows it.

Two orchestrator replicas share the inbox shards; the killed one's shards move to the
other within the lease TTL.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import httpx
import pytest
import redis
import yaml

from contreact_cli.config_file import load_experiment
from contreact_events.names import run_meta_key
from tests.support.compose_stack import ComposeStack

pytestmark = [pytest.mark.docker, pytest.mark.slow]

MODELS = ("stand-in-a:1b", "stand-in-b:3b")
"""Models the stand-in can pull (deploy/test/compose.yml), none present at start."""
REPLICAS = 2
CYCLES = 8
ORCHESTRATORS = 2
"""Two replicas sharing the inbox shards (issue 6): one is killed mid-run."""
LLM_WORKERS = 2
OLLAMA = "http://ollama:11434"
EXPERIMENT = "e2e"
EXPERIMENT_FILE = f"/configs/{EXPERIMENT}.yaml"
"""Where the cli container sees the file (the test's configs folder, mounted read-only)."""
ENDED = ("completed", "failed", "cancelled")

Metas = dict[str, dict[str, str]]


class Stack(Protocol):
    """What the checks below need of a stack (Compose's, or the swarm test's)."""

    env: dict[str, str]

    def cli(self, *commands: Sequence[str], timeout: float = 300) -> list[tuple[int, str, str]]: ...


def write_experiment(configs: Path) -> list[str]:
    """The experiment file; returns the run ids it makes, read with the CLI's own loader
    (``EXPERIMENT-LABEL-REPLICA``, the label made from the model name)."""
    data = {
        "experiment": EXPERIMENT,
        "replicas": REPLICAS,
        "cycle_count": CYCLES,
        "backend": "ollama",
        "ollama_client_config": {"host": OLLAMA, "timeout_s": 60},
        "model_options": {"seed": 1, "temperature": 0.7},
        "operator": {"mode": "auto"},
        "models": [{"model_name": model} for model in MODELS],
    }
    path = configs / Path(EXPERIMENT_FILE).name
    path.write_text(yaml.safe_dump(data))
    path.chmod(0o644)
    _experiment, planned = load_experiment(path)
    assert [run.config.model_name for run in planned] == [
        model for model in MODELS for _ in range(REPLICAS)
    ]
    return [run.config.run_id for run in planned]


def pull_models(stack: ComposeStack) -> None:
    """The stand-in has none of the models: `models check` of the experiment file names
    them, `models pull` pulls each once (four runs, two models), then both are there."""
    check, pull, again = stack.cli(
        ["models", "check", EXPERIMENT_FILE],
        ["models", "pull", EXPERIMENT_FILE],
        ["models", "check", EXPERIMENT_FILE],
    )
    assert check[0] == 1, check
    for model in MODELS:
        assert f"{OLLAMA}: MISSING {model}: not pulled" in check[1], check
    code, out, err = pull
    assert code == 0, f"{out}{err}"
    for model in MODELS:
        assert out.count(f"pulling {model} on {OLLAMA}") == 1, out
    assert out.count("pulling manifest") == len(MODELS) and "100% of" in out, out
    assert f"{OLLAMA}: {MODELS[0]} (pulled), {MODELS[1]} (pulled)" in out, out
    assert again[0] == 0, again
    assert again[1].strip() == f"{OLLAMA}: {MODELS[0]} (present), {MODELS[1]} (present)"


def submit_experiment(stack: ComposeStack, ids: Sequence[str]) -> None:
    """`docker compose run --rm cli experiment run /configs/e2e.yaml --detach`: every run
    of the file sent in one pipeline with the experiment's record, then it returns."""
    proc = stack(
        "run",
        "--rm",
        "-T",
        "cli",
        "experiment",
        "run",
        EXPERIMENT_FILE,
        "--detach",
        "--wait",
        "120",
        timeout=300,
    )
    assert f"experiment {EXPERIMENT}: {len(ids)} run(s): {len(ids)} submitted" in proc.stdout, (
        proc.stdout,
        proc.stderr,
    )


def kill_an_orchestrator(stack: ComposeStack) -> str:
    (first, *others) = stack.containers("orchestrator")
    if others:  # another replica takes the shards over
        stack.docker_kill(first)
    else:  # a crash: the restart policy starts the container again, which recovers
        stack.crash(first)
    return first


def metas(client: redis.Redis, ids: Sequence[str]) -> Metas:
    out = {}
    for run_id in ids:
        raw = client.hgetall(run_meta_key(run_id))
        out[run_id] = {k.decode(): v.decode() for k, v in raw.items()}
    return out


def wait_for(
    client: redis.Redis, ids: Sequence[str], what: str, ok: Callable[[Metas], bool], timeout: float
) -> Metas:
    deadline = time.monotonic() + timeout
    while True:
        current = metas(client, ids)
        if ok(current):
            return current
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}: {current}")
        time.sleep(0.3)


def check_runs(stack: Stack, ids: Sequence[str]) -> int:
    """Every run completed with its cycle count, its rebuilt state equal to the
    orchestrator's and its replay without divergence; the experiment's record naming
    them; the memory store equal to its rebuild from the logs. Returns the number of
    memory entries."""
    n = len(ids)
    results = stack.cli(
        *(["show", run_id, "--json"] for run_id in ids),
        *(["rebuild", run_id, "--json"] for run_id in ids),
        *(["replay", run_id, "--check"] for run_id in ids),
        ["experiment", "status", EXPERIMENT, "--json"],
        ["memory-rebuild", "--json"],
        ["export", ids[0], "--out", "/tmp/export"],
    )
    shows, rebuilds, replays = results[:n], results[n : 2 * n], results[2 * n : 3 * n]
    status, memory, export = results[3 * n :]
    for run_id, (code, out, err) in zip(ids, shows, strict=True):
        assert code == 0, err
        state = yaml.safe_load(out)
        assert state["status"] == "completed", (run_id, state.get("failure_reason"))
        assert len(state["cycle_metrics"]) == CYCLES, run_id
        assert state["backend"] == "ollama"
    for run_id, (code, out, err) in zip(ids, rebuilds, strict=True):
        assert code == 0, f"{run_id}: {out}{err}"
        assert yaml.safe_load(out)["equal"] is True, (run_id, out)
    for run_id, (code, out, err) in zip(ids, replays, strict=True):
        assert code == 0 and "no divergence" in out, (run_id, out, err)
    code, out, err = status
    assert code == 0, err
    rows = {row["run_id"]: row for row in yaml.safe_load(out)}
    assert sorted(rows) == sorted(ids)
    for row in rows.values():
        assert (row["status"], row["cycle"], row["attempt"]) == ("completed", CYCLES, 1), row
    code, out, err = memory
    report = yaml.safe_load(out)
    assert code == 0 and report["identical"] is True, (out, err)
    assert sorted(report["run_ids"]) == sorted(ids)
    assert export[0] == 0 and "wrote /tmp/export/" in export[1], export
    return int(report["entries"])


def ui_url(stack: Stack, path: str) -> str:
    return f"http://127.0.0.1:{stack.env['CONTREACT_UI_PUBLISHED_PORT']}{path}"


def wait_for_ui(stack: Stack, ids: Sequence[str], timeout: float) -> dict[str, Any]:
    """The dashboard's listing of the experiment (GET /runs.json from the host) once it
    shows every run ended: its projector follows the logs a little behind Redis."""
    deadline = time.monotonic() + timeout
    rows: dict[str, Any] = {}
    while True:
        try:
            response = httpx.get(ui_url(stack, "/runs.json"), params={"experiment": EXPERIMENT})
            response.raise_for_status()
            rows = {row["run_id"]: row for row in response.json()["runs"]}
        except httpx.HTTPError as exc:
            rows = {"error": repr(exc)}
        if set(rows) == set(ids) and all(row["status"] in ENDED for row in rows.values()):
            return rows
        if time.monotonic() > deadline:
            raise AssertionError(f"the dashboard did not show every run ended: {rows}")
        time.sleep(0.5)


def check_dashboard(stack: Stack, ids: Sequence[str]) -> None:
    """From the host: the JSON listing has every run completed with its cycles; a run's
    JSON page has every cycle; its HTML page renders."""
    rows = wait_for_ui(stack, ids, timeout=120)
    for row in rows.values():
        assert row["status"] == "completed", row
        assert (row["cycle"], row["cycle_count"]) == (CYCLES, CYCLES), row
        assert (row["experiment"], row["backend"]) == (EXPERIMENT, "ollama"), row
        assert row["model"] in MODELS and row["llm_calls"] >= 2 * CYCLES, row
    page = httpx.get(ui_url(stack, f"/runs/{ids[0]}.json"))
    assert page.status_code == 200, page.text
    data = page.json()
    assert data["run"]["run_id"] == ids[0] and data["run"]["status"] == "completed"
    assert [cycle["cycle"] for cycle in data["cycles"]] == list(range(1, CYCLES + 1))
    html = httpx.get(ui_url(stack, f"/runs/{ids[0]}"))
    assert html.status_code == 200, html.text[:500]
    assert html.headers["content-type"].startswith("text/html")
    assert ids[0] in html.text and "<html" in html.text


def ui_store_generation(stack: ComposeStack) -> str:
    """The generation stamped in the dashboard's ui.db when it was made (a rebuilt or
    new store gets a new one), read inside the ui container."""
    proc = stack(
        "exec",
        "-T",
        "ui",
        "python3",
        "-c",
        "import sqlite3; c = sqlite3.connect('file:/data/ui/ui.db?mode=ro', uri=True); "
        "print(c.execute(\"SELECT value FROM meta WHERE key = 'generation'\").fetchone()[0])",
        timeout=120,
    )
    generation = proc.stdout.strip().splitlines()[-1]
    assert len(generation) == 32, proc.stdout
    return generation


def test_experiment_survives_kills_and_a_restart_of_the_stack(
    compose_stack: ComposeStack, configs_dir: Path
) -> None:
    stack = compose_stack
    scale = {"orchestrator": ORCHESTRATORS, "llm-worker": LLM_WORKERS}
    cold_up_s = stack.up(scale)
    assert len(stack.containers("llm-worker")) == LLM_WORKERS
    assert len(stack.containers("ui")) == 1
    port, password = int(stack.env["CONTREACT_REDIS_PORT"]), stack.env["REDIS_PASSWORD"]
    with pytest.raises(redis.AuthenticationError):  # REDIS_PASSWORD is Redis's requirepass
        redis.Redis(port=port).ping()
    client = redis.Redis(port=port, password=password)
    ids = write_experiment(configs_dir)
    assert len(ids) == len(MODELS) * REPLICAS

    pull_models(stack)

    start = time.monotonic()
    submit_experiment(stack, ids)
    wait_for(
        client,
        ids,
        "every run in cycle 2",
        lambda m: all(int(r.get("cycle") or 0) >= 2 for r in m.values()),
        timeout=120,
    )
    worker = stack.containers("llm-worker")[0]
    stack.docker_kill(worker)
    orchestrator = kill_an_orchestrator(stack)
    at_kill = metas(client, ids)
    assert all(m["status"] == "running" and int(m["cycle"]) < CYCLES for m in at_kill.values()), (
        f"the kills must land mid-run: {at_kill}"
    )
    final = wait_for(
        client,
        ids,
        "every run to end",
        lambda m: all(r.get("status") in ENDED for r in m.values()),
        timeout=300,
    )
    experiment_s = time.monotonic() - start
    for run_id, meta in final.items():
        assert meta["status"] == "completed", (run_id, meta)
        assert meta["cycle"] == str(CYCLES), (run_id, meta)
    assert worker not in stack.containers("llm-worker"), "a `docker kill`ed worker stays down"
    if ORCHESTRATORS == 1:
        assert stack.restarts(orchestrator) >= 1, "the crashed orchestrator was restarted"
    entries = check_runs(stack, ids)
    assert entries == len(ids) * CYCLES  # one note written per cycle
    check_dashboard(stack, ids)
    generation = ui_store_generation(stack)

    # The volumes keep the runs (Redis's append-only file, the archives), the memory,
    # the experiment's record and the dashboard's store.
    stack.down()
    warm_up_s = stack.up(scale)
    listing, again = stack.cli(
        ["runs", "--json"], ["experiment", "run", EXPERIMENT_FILE, "--detach"]
    )
    rows = {row["run_id"]: row for row in yaml.safe_load(listing[1])}
    assert {r: rows[r]["status"] for r in ids} == dict.fromkeys(ids, "completed")
    assert again[0] == 0, again
    assert f"experiment {EXPERIMENT}: {len(ids)} run(s): {len(ids)} done already" in again[1]
    assert check_runs(stack, ids) == entries
    assert ui_store_generation(stack) == generation, "the ui volume keeps ui.db"
    check_dashboard(stack, ids)
    logs = stack("logs", "--no-color", timeout=120).stdout
    assert "orchestrator" in logs and password not in logs, "no service logs the password"
    print(
        f"compose: cold up {cold_up_s:.1f} s, 2x2 experiment ({CYCLES} cycles) "
        f"{experiment_s:.1f} s with kills, up again {warm_up_s:.1f} s"
    )
