"""`docker stack deploy` of docker-stack.yml with docker-stack.sentinel.yml (a Redis that
fails over: a primary, two replicas, three sentinels) on a real swarm (the engine as a
one-node swarm, every node label on it): the images pushed by `deploy/stack.sh push` to
Debian's docker-registry and pulled from it, two model servers outside the stack as the
runs' pool (the project's Ollama stand-in, on the host's network as a GPU host's would
be).

One experiment, 2 models x 4 replicas, with 2 orchestrators, 4 LLM workers and 2
assessors, every service reaching Redis through the sentinels: a rolling update of the
LLM workers (`docker service update --force`) begins mid-experiment, a task's container
(an orchestrator's) is killed, and so is the Redis primary's; a replica is promoted (the
sentinels name another server), the runs move again (the seconds are printed), every
run completes with its cycle count, swarm replaces the killed tasks and every LLM
worker task, and the old primary comes back as a replica of the new one; each run's
rebuilt state equals the live one, its replay has no divergence, the memory store
equals its rebuild (one note per cycle: every effect once, none lost); the dashboard
shows the runs from its published port. Then `docker stack rm` and a second deploy with
the volumes kept: the runs, the memory and the experiment's record are all still there
(submitting the file again sends nothing), and the sentinels name the promoted server
the primary still: the servers kept their roles in their volumes.

`deploy/stack.sh deploy` refuses, in one line, images the registry does not hold
(tests/unit/test_stack_file.py: no registry named, or none answering).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import redis
import yaml

from contreact_cli.config_file import load_experiment
from contreact_events.names import run_log_key
from tests.docker.test_compose_stack import (
    CYCLES,
    ENDED,
    EXPERIMENT,
    MODELS,
    check_dashboard,
    check_runs,
    metas,
    wait_for,
)
from tests.support.compose_stack import ROOT, run
from tests.support.swarm_stack import Registry, SwarmStack

pytestmark = [pytest.mark.docker, pytest.mark.slow]

REPLICAS = 4
FILE = f"/configs/{EXPERIMENT}.yaml"
EXPECTED = {"orchestrator": 2, "llm-worker": 4, "assessor": 2, "memory": 1, "embedder": 1}


def write_experiment(configs: Path, pool: list[str]) -> list[str]:
    """2 models x 4 replicas on the pool of model servers; the run ids, as the CLI
    makes them."""
    data = {
        "experiment": EXPERIMENT,
        "replicas": REPLICAS,
        "cycle_count": CYCLES,
        "backend": "ollama",
        "ollama_client_config": {"host": pool[0], "hosts": pool, "timeout_s": 60},
        "model_options": {"seed": 1, "temperature": 0.7},
        "operator": {"mode": "auto"},
        "models": [{"model_name": model} for model in MODELS],
    }
    path = configs / Path(FILE).name
    path.write_text(yaml.safe_dump(data))
    path.chmod(0o644)
    _experiment, planned = load_experiment(path)
    return [run.config.run_id for run in planned]


def logged_events(client: redis.Redis, ids: list[str]) -> int:
    """Events in the run logs."""
    with client.pipeline(transaction=False) as pipe:
        for run_id in ids:
            pipe.xlen(run_log_key(run_id))
        return sum(pipe.execute())


def test_deploy_refuses_images_the_registry_does_not_hold(
    docker_env: dict[str, str], registry: Registry
) -> None:
    """A registry that answers but lacks the images (never pushed, or another tag):
    one line naming them and the fix, before anything is deployed."""
    env = {
        **docker_env,
        "CONTREACT_IMAGE_PREFIX": f"{registry.address}/contreact-test",
        "CONTREACT_IMAGE_TAG": "never-pushed",
        "REDIS_PASSWORD": "x",
    }
    proc = run(["bash", str(ROOT / "deploy/stack.sh"), "deploy", "nothing"], env, check=False)
    assert proc.returncode == 1, proc
    (line,) = proc.stderr.splitlines()
    assert f"the registry {registry.address} has no {registry.address}/contreact-test/{{" in line
    assert "never-pushed: run `deploy/stack.sh push`" in line, line


def test_experiment_on_a_swarm_survives_an_update_a_kill_and_a_redeploy(
    swarm_stack: SwarmStack, configs_dir: Path
) -> None:
    stack = swarm_stack
    took: dict[str, float] = {}
    mark = time.monotonic()

    def lap(name: str) -> None:
        nonlocal mark
        took[name] = round(time.monotonic() - mark, 1)
        mark = time.monotonic()

    stack.deploy()
    lap("deploy")
    counts = stack.replicas()
    for service, wanted in EXPECTED.items():
        assert counts[service] == (wanted, wanted), counts
    assert stack.primary() == "redis", "the first primary is `redis`"
    assert {stack.role(s)[1] for s in ("redis-2", "redis-3")} == {"redis"}, "its replicas"
    client = stack.client()  # follows the primary
    ids = write_experiment(configs_dir, stack.servers)
    assert len(ids) == len(MODELS) * REPLICAS

    # Each server of the pool (`models pull FILE` alone pulls on the configs' `host`).
    urls = stack.servers
    results = stack.cli(
        *(["models", "pull", FILE, "--host", url] for url in urls),
        *(["models", "check", FILE, "--host", url] for url in urls),
    )
    pulls, checks = results[: len(urls)], results[len(urls) :]
    for url, pull, check in zip(urls, pulls, checks, strict=True):
        assert pull[0] == 0, pull
        assert check[0] == 0 and check[1].startswith(f"{url}: "), check
    lap("models pull")

    (submit,) = stack.cli(["experiment", "run", FILE, "--detach", "--wait", "120"])
    assert f"{len(ids)} run(s): {len(ids)} submitted" in submit[1], submit
    wait_for(
        client,
        ids,
        "every run in cycle 2",
        lambda m: all(int(r.get("cycle") or 0) >= 2 for r in m.values()),
        timeout=180,
    )
    workers = set(stack.tasks("llm-worker"))
    stack.update("llm-worker", "--force", "--update-parallelism", "2", "--update-delay", "0s")
    killed = stack.kill_task("orchestrator")
    at_kill = metas(client, ids)
    assert all(m["status"] == "running" and int(m["cycle"]) < CYCLES for m in at_kill.values()), (
        f"the update and the kills must land mid-run: {at_kill}"
    )
    stack.kill_task("redis")
    down = time.monotonic()
    promoted = stack.wait_for_new_primary("redis")
    failover = {"promoted": round(time.monotonic() - down, 1)}
    held = logged_events(client, ids)
    wait_for(
        client,
        ids,
        "the runs to move again after the failover",
        lambda _m: logged_events(client, ids) > held,
        timeout=180,
    )
    failover["moving"] = round(time.monotonic() - down, 1)
    final = wait_for(
        client,
        ids,
        "every run to end",
        lambda m: all(r.get("status") in ENDED for r in m.values()),
        timeout=600,
    )
    lap("experiment")
    replaced_mid_run = len(workers - set(stack.tasks("llm-worker")))
    assert replaced_mid_run >= 1, f"no worker task was replaced while the runs went on: {took}"
    for run_id, meta in final.items():
        assert (meta["status"], meta["cycle"]) == ("completed", str(CYCLES)), (run_id, meta)
    stack.wait_updated("llm-worker")
    stack.wait_converged()
    lap("update's end")
    assert not workers & set(stack.tasks("llm-worker")), "every worker task was replaced"
    assert len(stack.tasks("llm-worker")) == 4
    orchestrators = stack.tasks("orchestrator")
    assert killed not in orchestrators and len(orchestrators) == 2, "swarm replaced the task"
    assert stack.primary() == promoted
    assert stack.role("redis") == ["slave", promoted], "the old primary is a replica now"
    entries = check_runs(stack, ids)
    assert entries == len(ids) * CYCLES  # one note written per cycle, none twice
    lap("checks")
    check_dashboard(stack, ids)
    lap("dashboard")

    volumes = stack.volumes()
    assert {f"{stack.name}_{v}" for v in ("redis-data", "runs", "memory", "ui")} <= set(volumes)
    stack.remove()
    lap("stack rm")
    assert stack.volumes() == volumes, "docker stack rm keeps the volumes"
    stack.deploy()
    lap("deploy again")
    listing, again = stack.cli(["runs", "--json"], ["experiment", "run", FILE, "--detach"])
    rows = {row["run_id"]: row for row in yaml.safe_load(listing[1])}
    assert {r: rows[r]["status"] for r in ids} == dict.fromkeys(ids, "completed")
    assert again[0] == 0 and f"{len(ids)} run(s): {len(ids)} done already" in again[1], again
    assert check_runs(stack, ids) == entries
    check_dashboard(stack, ids)
    assert stack.primary() == promoted, "the servers kept their roles"
    lap("checks again")
    print(
        f"swarm: 2x4 experiment of {CYCLES} cycles; worker tasks replaced while the runs "
        f"went on: {replaced_mid_run} of 4; the Redis primary killed mid-run: {promoted} "
        f"promoted {failover['promoted']} s after the kill, the runs moving again "
        f"{failover['moving']} s after it; seconds: {took}"
    )
