"""`docker compose up` on a real engine: the images built offline on the local base,
Ollama replaced by the project's stand-in (a container), an experiment of 2 models x 2
replicas through the CLI container, a worker and an orchestrator killed mid-run, every
run complete with its cycle count and its rebuilt state equal to the live one, and the
runs and the memory still there after `docker compose down` and `up` (volumes).

Two orchestrator replicas share the inbox shards; the killed one's shards move to the
other within the lease TTL. (When the experiments land, ``submit_experiment`` becomes
one ``contreact experiment run`` of an experiment file.)
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import pytest
import redis
import yaml

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


def run_ids() -> list[str]:
    return [f"E2E-{model.split(':')[0]}-{r}" for model in MODELS for r in range(1, REPLICAS + 1)]


def write_configs(configs: Path) -> list[str]:
    """One run config per model x replica, as the experiment file will produce them."""
    names = []
    for model in MODELS:
        for replica in range(1, REPLICAS + 1):
            run_id = f"E2E-{model.split(':')[0]}-{replica}"
            config = {
                "run_id": run_id,
                "model_name": model,
                "cycle_count": CYCLES,
                "backend": "ollama",
                "ollama_client_config": {"host": OLLAMA, "timeout_s": 60},
                "model_options": {"seed": replica, "temperature": 0.7},
                "operator": {"mode": "auto"},
                "experiment": "e2e",
            }
            path = configs / f"{run_id}.yaml"
            path.write_text(yaml.safe_dump(config))
            path.chmod(0o644)
            names.append(f"/configs/{path.name}")
    return names


def submit_experiment(stack: ComposeStack, configs: Sequence[str]) -> None:
    """Four `contreact run --detach` from one cli container (later: `experiment run`)."""
    results = stack.cli(*(["run", "--detach", "--wait", "120", c] for c in configs))
    for config, (code, out, err) in zip(configs, results, strict=True):
        assert code == 0, f"run {config}: {out}{err}"
        assert "accepted" in out


def kill_an_orchestrator(stack: ComposeStack) -> str:
    (first, *others) = stack.containers("orchestrator")
    if others:  # another replica takes the shards over
        stack.docker_kill(first)
    else:  # a crash: the restart policy starts the container again, which recovers
        stack.crash(first)
    return first


def metas(client: redis.Redis) -> dict[str, dict[str, str]]:
    out = {}
    for run_id in run_ids():
        raw = client.hgetall(run_meta_key(run_id))
        out[run_id] = {k.decode(): v.decode() for k, v in raw.items()}
    return out


def wait_for(client: redis.Redis, what: str, ok: object, timeout: float) -> dict:  # type: ignore[type-arg]
    deadline = time.monotonic() + timeout
    while True:
        current = metas(client)
        if ok(current):  # type: ignore[operator]
            return current
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}: {current}")
        time.sleep(0.3)


def check_runs(stack: ComposeStack) -> int:
    """Every run completed with its cycle count, its rebuilt state equal to the
    orchestrator's and its replay without divergence; the memory store equal to its
    rebuild from the logs. Returns the number of memory entries."""
    ids = run_ids()
    results = stack.cli(
        *(["show", run_id, "--json"] for run_id in ids),
        *(["rebuild", run_id, "--json"] for run_id in ids),
        *(["replay", run_id, "--check"] for run_id in ids),
        ["memory-rebuild", "--json"],
        ["export", ids[0], "--out", "/tmp/export"],
    )
    shows, rebuilds, replays = results[:4], results[4:8], results[8:12]
    memory, export = results[12], results[13]
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
    code, out, err = memory
    report = yaml.safe_load(out)
    assert code == 0 and report["identical"] is True, (out, err)
    assert sorted(report["run_ids"]) == sorted(ids)
    assert export[0] == 0 and "wrote /tmp/export/" in export[1], export
    return int(report["entries"])


def test_experiment_survives_kills_and_a_restart_of_the_stack(
    compose_stack: ComposeStack, configs_dir: Path
) -> None:
    stack = compose_stack
    scale = {"orchestrator": ORCHESTRATORS, "llm-worker": LLM_WORKERS}
    cold_up_s = stack.up(scale)
    assert len(stack.containers("llm-worker")) == LLM_WORKERS
    client = redis.Redis(port=int(stack.env["CONTREACT_REDIS_PORT"]))
    configs = write_configs(configs_dir)

    # Models: the stand-in has none; `models check` names them, `models pull` pulls them.
    first_a, first_b = configs[0], configs[REPLICAS]
    check, pull_a, pull_b, again = stack.cli(
        ["models", "check", first_a],
        ["models", "pull", first_a],
        ["models", "pull", first_b],
        ["models", "check", first_b],
    )
    assert check[0] == 1 and f"MISSING {MODELS[0]}" in check[1], check
    for (code, out, err), model in ((pull_a, MODELS[0]), (pull_b, MODELS[1])):
        assert code == 0, err
        assert "pulling manifest" in out and "100% of" in out and "success" in out
        assert f"{model} (pulled)" in out
    assert again[0] == 0 and f"{MODELS[1]} (present)" in again[1], again

    start = time.monotonic()
    submit_experiment(stack, configs)
    wait_for(
        client,
        "every run in cycle 2",
        lambda m: all(int(r.get("cycle") or 0) >= 2 for r in m.values()),
        timeout=120,
    )
    worker = stack.containers("llm-worker")[0]
    stack.docker_kill(worker)
    orchestrator = kill_an_orchestrator(stack)
    at_kill = metas(client)
    assert all(m["status"] == "running" and int(m["cycle"]) < CYCLES for m in at_kill.values()), (
        f"the kills must land mid-run: {at_kill}"
    )
    final = wait_for(
        client,
        "every run to end",
        lambda m: all(r.get("status") in ("completed", "failed", "cancelled") for r in m.values()),
        timeout=300,
    )
    experiment_s = time.monotonic() - start
    for run_id, meta in final.items():
        assert meta["status"] == "completed", (run_id, meta)
        assert meta["cycle"] == str(CYCLES), (run_id, meta)
    assert worker not in stack.containers("llm-worker"), "a `docker kill`ed worker stays down"
    if ORCHESTRATORS == 1:
        assert stack.restarts(orchestrator) >= 1, "the crashed orchestrator was restarted"
    entries = check_runs(stack)
    assert entries == len(run_ids()) * CYCLES  # one note written per cycle

    # The volumes keep the runs (Redis's append-only file, the archives) and the memory.
    stack.down()
    warm_up_s = stack.up(scale)
    listing = stack.cli(["runs", "--json"])[0]
    rows = {row["run_id"]: row for row in yaml.safe_load(listing[1])}
    assert {r: rows[r]["status"] for r in run_ids()} == dict.fromkeys(run_ids(), "completed")
    assert check_runs(stack) == entries
    print(
        f"compose: cold up {cold_up_s:.1f} s, 2x2 experiment ({CYCLES} cycles) "
        f"{experiment_s:.1f} s with kills, up again {warm_up_s:.1f} s"
    )
