"""Fixtures of the docker e2e tests: an engine (started here when it can be), the
images (built offline, cached by content hash) and a Compose project per test, removed
with its volumes afterwards."""

from __future__ import annotations

import os
import secrets
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


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report
