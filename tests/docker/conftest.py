"""Fixtures of the docker e2e tests: an engine (started here when it can be), the
images (built offline, cached by content hash) and a Compose project per test, removed
with its volumes afterwards."""

from __future__ import annotations

import json
import os
import secrets
import time
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from contreact_bus.local_redis import free_port
from tests.support.compose_stack import (
    ComposeStack,
    DockerUnavailable,
    Images,
    ensure_engine,
    prepare_images,
    run,
)
from tests.support.swarm_stack import (
    SENTINEL_FILE,
    STACK_FILE,
    Registry,
    SwarmStack,
    ensure_swarm,
    stand_in,
)

NEEDS = (
    "the docker tests need a Docker engine with Compose (deploy/engine.sh installs and "
    "starts Debian's as root) and a Linux host that can make the local base image "
    "(debootstrap, root) or CONTREACT_TEST_BASE_IMAGE naming a Python 3.11 image; "
    'leave them out with -m "not docker"'
)


def _say(config: pytest.Config, line: str) -> None:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if reporter is None or capture is None:
        return
    with capture.global_and_fixture_disabled():
        reporter.write_line(f"docker: {line}")


@pytest.fixture(scope="session")
def docker_env(pytestconfig: pytest.Config) -> dict[str, str]:
    try:
        host = ensure_engine()
    except DockerUnavailable as exc:
        pytest.fail(f"{exc}: {NEEDS}", pytrace=False)
    _say(pytestconfig, f"engine at {host}")
    return {**os.environ, "DOCKER_HOST": host}


@pytest.fixture(scope="session")
def images(docker_env: dict[str, str], pytestconfig: pytest.Config) -> Images:
    try:
        built = prepare_images(docker_env, log=lambda line: _say(pytestconfig, line))
    except DockerUnavailable as exc:
        pytest.fail(f"{exc}: {NEEDS}", pytrace=False)
    how = "built" if built.built else "cached"
    _say(pytestconfig, f"images {built.tag} ({how}; seconds per step: {built.seconds})")
    return built


@pytest.fixture
def configs_dir(tmp_path: Path) -> Path:
    """Mounted read-only at /configs in the cli container (as its non-root user)."""
    path = tmp_path / "configs"
    path.mkdir()
    path.chmod(0o755)
    return path


@pytest.fixture
def compose_stack(
    docker_env: dict[str, str], images: Images, configs_dir: Path, request: pytest.FixtureRequest
) -> Iterator[ComposeStack]:
    env = {
        **docker_env,
        **images.env(),
        "CONTREACT_REDIS_PORT": str(free_port()),
        "OLLAMA_PORT": str(free_port()),
        "CONTREACT_UI_PUBLISHED_PORT": str(free_port()),
        "CONTREACT_CONFIGS": str(configs_dir),
        # Redis with a password, as .env.example offers: every service, the cli and the
        # health checks must get it through compose.
        "REDIS_PASSWORD": secrets.token_hex(16),
    }
    stack = ComposeStack(env=env)
    try:
        yield stack
    finally:
        report = getattr(request.node, "rep_call", None)
        if report is not None and report.failed:
            print(stack.logs(tail=80))
        stack.down(volumes=True)


@pytest.fixture(scope="session")
def registry(docker_env: dict[str, str], pytestconfig: pytest.Config) -> Iterator[Registry]:
    """Debian's docker-registry on a free loopback port (deploy/registry.sh); its
    storage stays in the user's cache (``registry_storage``), so a later run, of this
    clone or another, pushes no layer again."""
    try:
        started = Registry.start(docker_env)
    except DockerUnavailable as exc:
        pytest.fail(f"{exc}: {NEEDS}", pytrace=False)
    _say(pytestconfig, f"registry at {started.address}")
    yield started
    started.stop()


STAND_IN_LATENCY_S = 2.0
"""Seconds per stand-in answer: the experiment lasts long enough for a rolling update."""


@pytest.fixture
def swarm_stack(
    docker_env: dict[str, str],
    images: Images,
    registry: Registry,
    configs_dir: Path,
    request: pytest.FixtureRequest,
    pytestconfig: pytest.Config,
) -> Iterator[SwarmStack]:
    """A stack on a one-node swarm of the engine (every node label on it), its images
    pushed to the registry by deploy/stack.sh, two model servers outside it (the pool);
    its Redis is docker-stack.sentinel.yml's: a primary, two replicas, three sentinels."""
    try:
        ensure_swarm(docker_env)
    except DockerUnavailable as exc:
        pytest.fail(f"{exc}: {NEEDS}", pytrace=False)
    prefix = f"{registry.address}/{images.env()['CONTREACT_IMAGE_PREFIX']}"
    servers = [
        stand_in(docker_env, images.service_image("ollama"), STAND_IN_LATENCY_S) for _ in range(2)
    ]
    name = f"crsw{secrets.token_hex(3)}"
    env = {
        **docker_env,
        "CONTREACT_IMAGE_PREFIX": prefix,
        "CONTREACT_IMAGE_TAG": images.tag,
        "CONTREACT_LOCAL_PREFIX": images.env()["CONTREACT_IMAGE_PREFIX"],
        "REDIS_PASSWORD": secrets.token_hex(16),
        "CONTREACT_STACK_FILE": f"{STACK_FILE}:{SENTINEL_FILE}",
        "CONTREACT_REDIS_PORT": str(free_port()),
        "CONTREACT_REDIS_2_PORT": str(free_port()),
        "CONTREACT_REDIS_3_PORT": str(free_port()),
        "CONTREACT_UI_PUBLISHED_PORT": str(free_port()),
        "CONTREACT_ORCHESTRATORS": "2",
        "CONTREACT_LLM_WORKERS": "4",
        "CONTREACT_ASSESSORS": "2",
        "CONTREACT_LLM_HOSTS": json.dumps(
            {url: {"parallel": 4, "max_loaded_models": 2} for _, url in servers}
        ),
        "CONTREACT_OPENROUTER_SECRET": f"{name}_openrouter",
        # As deploy/test/compose.yml: a killed task's claimed entries move on sooner.
        "CONTREACT_ORCH_RECLAIM_IDLE_MS": "3000",
        "CONTREACT_LLM_RECLAIM_IDLE_MS": "5000",
        "CONTREACT_MEMORY_RECLAIM_IDLE_MS": "5000",
        "CONTREACT_EMBED_RECLAIM_IDLE_MS": "5000",
    }
    stack = SwarmStack(env, images, configs_dir, [url for _, url in servers], name)
    try:
        start = time.monotonic()
        push = stack.script("push")
        assert push.returncode == 0, push.stderr
        env["REDIS_IMAGE"] = registry.push(images.redis, docker_env)
        _say(
            pytestconfig, f"images pushed to {registry.address} in {time.monotonic() - start:.1f} s"
        )
        run(
            ["docker", "secret", "create", env["CONTREACT_OPENROUTER_SECRET"], "-"],
            env,
            input_bytes=b"none",
        )
        yield stack
    finally:
        report = getattr(request.node, "rep_call", None)
        if report is not None and report.failed:
            for service in ("orchestrator", "llm-worker", "memory", "redis", "sentinel-1"):
                print(stack.logs(service))
        stack.destroy()
        run(["docker", "rm", "-f", *(c for c, _ in servers)], docker_env, check=False)
        local = run(
            [
                "docker",
                "image",
                "ls",
                "--format",
                "{{.Repository}}:{{.Tag}}",
                f"{registry.address}/*/*",
            ],
            docker_env,
            check=False,
        ).stdout.split()
        if local:  # the registry's names of the images: tags only, the layers stay
            run(["docker", "image", "rm", *local], docker_env, check=False)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report
