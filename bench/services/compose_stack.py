"""Containers against processes: the platform under `docker compose` (the images built
offline on the local base image, the Ollama stand-in as a container; the tests'
override, deploy/test/compose.yml) against the same platform under `contreact up`
(every service a process here, the stand-in in this process).

Figures:

- image size per service: ``docker image inspect``'s Size (the image with its base;
  the base image's own size is shown for reference). The base here is Debian
  bookworm's Python from debootstrap (144 MB), in place of python:3.11-slim.
- cold `docker compose up`: a new project (new volumes, new containers), images
  present. Three moments: `up -d` returned (containers started, Redis and the Ollama
  stand-in healthy, since the services wait for them); every service kind has a fresh
  heartbeat (what `contreact run` waits for); every container is healthy (Docker's
  health checks, run every 10 s).
- the experiment: one experiment file, 2 models x 2 replicas, ``--cycles`` cycles, the
  stand-in answering each chat request in ``--latency`` s (a note written, then a
  reflection: 2 LLM calls, 1 memory write and 1 embedding per cycle), 1 orchestrator,
  2 LLM workers, the dashboard following. Submitted with `contreact experiment run
  --detach` (in a cli container for compose). Wall time from the submission to the
  last run completed, in compose and under `contreact up`; the ratio compose / up is
  the cost of the containers (their network, the CLI in a container).

Run: ``make bench-docker`` (needs what the docker tests need: see the README).
``--smoke`` needs no engine: it builds the compose half's plan (the experiment file
and its run ids, the compose files naming every service kind) and runs the `contreact
up` half for real at one cycle.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import redis
import redis.asyncio as aioredis
import yaml

from bench._support import (
    ROOT,
    add_smoke_flag,
    figure,
    header,
    ratio,
    redis_server,
    row,
    use_smoke_sizes,
)
from contreact_bus.heartbeats import heartbeats
from contreact_bus.local_redis import free_port
from contreact_cli.config_file import load_experiment
from contreact_events.names import run_meta_key
from tests.support.compose_stack import (
    BUILT_SERVICES,
    COMPOSE_FILES,
    ComposeStack,
    ensure_engine,
    prepare_images,
    run,
)
from tests.support.fake_ollama import running_fake_ollama

MODELS = ("stand-in-a:1b", "stand-in-b:3b")
REPLICAS = 2
KINDS = ("orchestrator", "llm-worker", "memory", "embedder", "ui")


def experiment_file(folder: Path, host: str, cycles: int) -> tuple[Path, list[str]]:
    """The experiment (2 models x 2 replicas) and the run ids it makes."""
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o755)
    data = {
        "experiment": "bench",
        "replicas": REPLICAS,
        "cycle_count": cycles,
        "backend": "ollama",
        "ollama_client_config": {"host": host, "timeout_s": 60},
        "model_options": {"seed": 1},
        "models": [{"model_name": model} for model in MODELS],
    }
    path = folder / "bench.yaml"
    path.write_text(yaml.safe_dump(data))
    path.chmod(0o644)
    return path, [run.config.run_id for run in load_experiment(path)[1]]


def wait_completed(client: redis.Redis, run_ids: list[str], timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while True:
        statuses = [(client.hget(run_meta_key(r), "status") or b"").decode() for r in run_ids]
        if all(s in ("completed", "failed", "cancelled") for s in statuses):
            if set(statuses) != {"completed"}:
                raise SystemExit(
                    f"bench: runs did not complete: {dict(zip(run_ids, statuses, strict=True))}"
                )
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"bench: runs still going after {timeout} s: {statuses}")
        time.sleep(0.1)


def wait_heartbeats(url: str, timeout: float = 300) -> None:
    """Until every service kind has a fresh heartbeat (what `contreact run` waits for)."""

    async def fresh() -> set[str]:
        client = aioredis.Redis.from_url(url)
        try:
            beats = await heartbeats(client)
        finally:
            await client.aclose()
        now = time.time()
        return {name.split(":", 1)[0] for name, ts in beats.items() if now - ts < 10}

    deadline = time.monotonic() + timeout
    while True:
        kinds = asyncio.run(fresh())
        if all(kind in kinds for kind in KINDS):
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"bench: no fresh heartbeat of {set(KINDS) - kinds}")
        time.sleep(0.1)


def compose_experiment(args: argparse.Namespace, env: dict[str, str]) -> dict[str, float]:
    images = prepare_images(env, log=lambda line: print(f"   {line}", flush=True))
    base_size = int(
        run(["docker", "image", "inspect", "--format", "{{.Size}}", images.base], env).stdout
    )
    row("base image (debootstrap bookworm, python3)", base_size / 1e6, "MB")
    for service in BUILT_SERVICES:
        out = run(
            ["docker", "image", "inspect", "--format", "{{.Size}}", images.service_image(service)],
            env,
        ).stdout
        label = "ollama stand-in (tests only)" if service == "ollama" else service
        row(f"image {label}", int(out) / 1e6, "MB")
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="bench-compose-") as tmp:
        folder = Path(tmp) / "configs"
        path, run_ids = experiment_file(folder, "http://ollama:11434", args.cycles)
        port = free_port()
        stack_env = {
            **env,
            **images.env(),
            "CONTREACT_REDIS_PORT": str(port),
            "OLLAMA_PORT": str(free_port()),
            "CONTREACT_UI_PUBLISHED_PORT": str(free_port()),
            "CONTREACT_CONFIGS": str(folder),
            "STAND_IN_LATENCY_S": str(args.latency),
        }
        stack = ComposeStack(env=stack_env)
        try:
            start = time.monotonic()
            stack("up", "-d", "--no-build", "--scale", "llm-worker=2", "redis", "ollama", *KINDS)
            figures["started"] = time.monotonic() - start
            client = redis.Redis(port=port)
            wait_heartbeats(f"redis://127.0.0.1:{port}/0")
            figures["heartbeats"] = time.monotonic() - start
            stack.wait_healthy()
            figures["healthy"] = time.monotonic() - start
            pulls = stack.cli(["models", "pull", f"/configs/{path.name}"])
            assert all(code == 0 for code, _, _ in pulls), pulls
            start = time.monotonic()
            stack(
                "run", "--rm", "-T", "cli", "experiment", "run", f"/configs/{path.name}", "--detach"
            )
            figures["submitted"] = time.monotonic() - start
            wait_completed(client, run_ids)
            figures["experiment"] = time.monotonic() - start
        finally:
            stack.down(volumes=True)
    return figures


@contextlib.contextmanager
def contreact_up(redis_url: str, data_dir: Path) -> Iterator[dict[str, str]]:
    env = {
        **os.environ,
        "REDIS_URL": redis_url,
        "CONTREACT_DATA_DIR": str(data_dir),
        "CONTREACT_UI_PORT": str(free_port()),
    }
    cli = [sys.executable, "-m", "contreact_cli"]
    try:  # `up` inside: an interrupted start is still taken `down`
        subprocess.run([*cli, "up", "--llm-workers", "2"], env=env, check=True, capture_output=True)
        yield env
    finally:
        subprocess.run([*cli, "down"], env=env, capture_output=True)


def local_experiment(args: argparse.Namespace) -> dict[str, float]:
    figures: dict[str, float] = {}
    with (
        redis_server() as url,
        tempfile.TemporaryDirectory(prefix="bench-up-") as tmp,
        running_fake_ollama(models=list(MODELS)) as fake,
    ):
        fake.auto_reply = True
        fake.latency_s = args.latency
        path, run_ids = experiment_file(Path(tmp) / "configs", fake.host, args.cycles)
        with contreact_up(url, Path(tmp) / "data") as env:
            client = redis.Redis.from_url(url)
            start = time.monotonic()
            subprocess.run(
                [sys.executable, "-m", "contreact_cli", "experiment", "run", "--detach", str(path)],
                env=env,
                check=True,
                capture_output=True,
            )
            figures["submitted"] = time.monotonic() - start
            wait_completed(client, run_ids)
            figures["experiment"] = time.monotonic() - start
    return figures


def compose_plan(cycles: int) -> None:
    """What the compose half would start, checked without an engine: the experiment
    file loads into its runs, and the compose files name every service kind."""
    with tempfile.TemporaryDirectory(prefix="bench-plan-") as tmp:
        _, run_ids = experiment_file(Path(tmp) / "configs", "http://ollama:11434", cycles)
    services: set[str] = set()
    for name in COMPOSE_FILES:
        services |= set((yaml.safe_load((ROOT / name).read_text()) or {}).get("services") or {})
    missing = {"redis", "ollama", *KINDS} - services
    if missing:
        raise SystemExit(f"bench: the compose files {COMPOSE_FILES} lack services {missing}")
    row("compose plan: services in the compose files", len(services), "")
    row("compose plan: runs of the experiment", len(run_ids), "")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=10)
    parser.add_argument("--latency", type=float, default=0.3)
    add_smoke_flag(parser)
    args = parser.parse_args(argv)
    if args.smoke:
        args.cycles, args.latency = 1, 0.01
        use_smoke_sizes(globals())
    header(
        f"compose stack: 2 models x 2 replicas, {args.cycles} cycles, "
        f"stand-in latency {args.latency} s"
    )
    if args.smoke:
        compose_plan(args.cycles)
        local = local_experiment(args)
        row("contreact up: experiment submitted", local["submitted"], "s")
        row("contreact up: experiment wall time", local["experiment"], "s")
        return
    env = {**os.environ, "DOCKER_HOST": ensure_engine()}
    compose = compose_experiment(args, env)
    row("cold up: containers started", compose["started"], "s")
    row("cold up: every service's heartbeat fresh", compose["heartbeats"], "s")
    row("cold up: every container healthy", compose["healthy"], "s")
    local = local_experiment(args)
    row("compose: experiment submitted (cli container)", compose["submitted"], "s")
    row("compose: experiment wall time", compose["experiment"], "s")
    row("contreact up: experiment submitted", local["submitted"], "s")
    row("contreact up: experiment wall time", local["experiment"], "s")
    share = ratio("experiment: compose / contreact up", compose["experiment"], local["experiment"])
    figure("experiment: compose / contreact up", share, "x", "the same experiment, same run")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"   load average at the end (1, 5, 15 min): {load}")


if __name__ == "__main__":
    os.chdir(ROOT)
    main()
