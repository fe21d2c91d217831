"""The whole platform as containers, for the docker e2e test and its benchmark.

``ensure_engine`` makes a Docker engine answer (``deploy/engine.sh``: installs and
starts one when it can). ``prepare_images`` builds every image offline: the local base
image (``deploy/base-image.sh``), the host's wheelhouse (``deploy/wheelhouse.sh``) as a
wheels image, Debian's redis-server on the base, and the project's images through
Compose with the test override (``deploy/test/compose.yml``). Each image is tagged by
the content hash of what went into it, so an unchanged tree builds nothing.
``ComposeStack`` drives one Compose project (its own name, volumes and ports).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILES = ("docker-compose.yml", "deploy/test/compose.yml")
IMAGE_PREFIX = "contreact-test"
BUILT_SERVICES = (
    "orchestrator",
    "llm-worker",
    "memory",
    "embedder",
    "ui",
    "assessor",
    "cli",
    "ollama",
)
"""Services whose images Compose builds (``ollama``: the stand-in)."""
STACK_SERVICES = (
    "redis",
    "ollama",
    "orchestrator",
    "llm-worker",
    "memory",
    "embedder",
    "ui",
    "assessor",
)
"""Services `up` starts (the cli is run on demand)."""
HASHED = ("deploy", "libs", "services", "cli", "tests/support/fake_ollama.py", *COMPOSE_FILES)
"""What goes into the images: the content hash covers these (and the base and wheels)."""
REDIS_PACKAGES = ("redis-tools", "redis-server", "libjemalloc2", "liblzf1", "libatomic1")
SKIPPED_PARTS = {"__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache"}
EARLY_LOG = ROOT / "build" / "images-early.log"
"""Where the early build that `make test` starts in the background writes."""

Log = Callable[[str], None]


class DockerUnavailable(Exception):
    """No Docker engine or Compose can be had here; the message says what is missing."""


def run(
    argv: Sequence[str],
    env: Mapping[str, str] | None = None,
    *,
    timeout: float = 600,
    check: bool = True,
    input_bytes: bytes | None = None,
    cwd: Path = ROOT,
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        list(argv),
        env=dict(env) if env is not None else None,
        cwd=cwd,
        capture_output=True,
        text=input_bytes is None,
        timeout=timeout,
        input=input_bytes,
    )
    if input_bytes is not None:  # bytes in, so bytes out: decode for the caller
        proc = subprocess.CompletedProcess(
            proc.args,
            proc.returncode,
            proc.stdout.decode(errors="replace"),
            proc.stderr.decode(errors="replace"),
        )
    if check and proc.returncode != 0:
        raise RuntimeError(
            f"{' '.join(argv)} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n"
            f"{proc.stderr[-3000:]}"
        )
    return proc


def ensure_engine() -> str:
    """The DOCKER_HOST of an engine that answers (started here when it can be)."""
    proc = run(["bash", str(ROOT / "deploy/engine.sh")], os.environ, check=False, timeout=900)
    if proc.returncode != 0:
        raise DockerUnavailable(proc.stderr.strip().splitlines()[-1] if proc.stderr else "")
    return proc.stdout.strip().splitlines()[-1]


def compose_argv(env: Mapping[str, str]) -> list[str]:
    """``docker compose`` (v2) when the client has it, else Compose 1.29's command."""
    if run(["docker", "compose", "version"], env, check=False, timeout=30).returncode == 0:
        return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    raise DockerUnavailable("no Docker Compose: deploy/engine.sh installs one as root")


def image_exists(image: str, env: Mapping[str, str]) -> bool:
    return run(["docker", "image", "inspect", image], env, check=False, timeout=30).returncode == 0


def image_id(image: str, env: Mapping[str, str]) -> str:
    return run(["docker", "image", "inspect", "--format", "{{.Id}}", image], env).stdout.strip()


def tree_hash(paths: Iterable[str], *extra: str) -> str:
    """A hash of the files under ``paths`` (names and contents), and of ``extra``."""
    digest = hashlib.sha256()
    for item in extra:
        digest.update(item.encode() + b"\0")
    for top in paths:
        base = ROOT / top
        files = [base] if base.is_file() else sorted(p for p in base.rglob("*") if p.is_file())
        for path in files:
            rel = path.relative_to(ROOT)
            if SKIPPED_PARTS & set(rel.parts) or path.suffix == ".pyc" or ".egg-info" in str(rel):
                continue
            digest.update(str(rel).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


@dataclass
class Images:
    base: str
    wheels: str
    """The wheels of every image but the embedder's."""
    embedder_wheels: str
    redis: str
    tag: str
    """The content-hash tag of the images Compose builds."""
    built: bool
    seconds: dict[str, float] = field(default_factory=dict)
    """How long each preparation step took (0 when it was cached)."""

    def env(self) -> dict[str, str]:
        return {
            "BASE_IMAGE": self.base,
            "WHEELS_IMAGE": self.wheels,
            "EMBEDDER_WHEELS_IMAGE": self.embedder_wheels,
            "TEST_REDIS_IMAGE": self.redis,
            "CONTREACT_IMAGE_PREFIX": IMAGE_PREFIX,
            "CONTREACT_IMAGE_TAG": self.tag,
        }

    def service_image(self, service: str) -> str:
        name = "ollama-stand-in" if service == "ollama" else service
        return f"{IMAGE_PREFIX}/{name}:{self.tag}"


@contextlib.contextmanager
def _images_lock(log: Log) -> Iterator[None]:
    """One preparation at a time on this checkout: `make test` starts one early, in the
    background (``python3 -m tests.support.compose_stack``), and the docker test's
    fixture then waits for it and finds every image built, instead of building them a
    second time beside it."""
    path = ROOT / "build" / "images.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log(f"waiting for the image build already under way ({EARLY_LOG.relative_to(ROOT)})")
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def prepare_images(env: Mapping[str, str], log: Log = print) -> Images:
    """Every image the test stack runs, built only where its content changed."""
    with _images_lock(log):
        return _prepare_images(env, log)


def _prepare_images(env: Mapping[str, str], log: Log) -> Images:
    seconds: dict[str, float] = {}

    def step(name: str, fn: Callable[[], str]) -> str:
        start = time.monotonic()
        out = fn()
        seconds[name] = round(time.monotonic() - start, 1)
        return out

    base = os.environ.get("CONTREACT_TEST_BASE_IMAGE") or step(
        "base image", lambda: _script("deploy/base-image.sh", env)
    )
    step("wheelhouse", lambda: _script("deploy/wheelhouse.sh", {**env, "PYTHON": _python()}))
    wheels = step("wheels image", lambda: _wheels_image("common", env, log))
    embedder_wheels = step("embedder wheels image", lambda: _wheels_image("embedder", env, log))
    redis = step("redis image", lambda: _redis_image(base, env, log))
    tag = tree_hash(HASHED, image_id(base, env), wheels, embedder_wheels)
    images = Images(base, wheels, embedder_wheels, redis, tag, built=False, seconds=seconds)
    missing = [s for s in BUILT_SERVICES if not image_exists(images.service_image(s), env)]
    if missing:
        log(f"building the images {', '.join(missing)} ({IMAGE_PREFIX}/*:{tag})")
        build_env = {**env, **images.env()}
        start = time.monotonic()
        run([*compose_argv(env), *compose_files(), "build", *missing], build_env, timeout=3600)
        seconds["compose build"] = round(time.monotonic() - start, 1)
        images.built = True
        _remove_other_tags(images, env)
    return images


def compose_files() -> list[str]:
    return [arg for name in COMPOSE_FILES for arg in ("-f", str(ROOT / name))]


def _python() -> str:
    import sys

    return sys.executable


def _script(name: str, env: Mapping[str, str]) -> str:
    proc = run(["bash", str(ROOT / name)], env, check=False, timeout=1800)
    if proc.returncode != 0:
        raise DockerUnavailable(f"{name}: {proc.stderr.strip()[-500:]}")
    lines = proc.stdout.strip().splitlines()
    return lines[-1] if lines else ""


def _wheels_image(part: str, env: Mapping[str, str], log: Log) -> str:
    """One set of the wheelhouse as an image holding /wheels (no build: an import)."""
    wheelhouse = ROOT / "build" / "wheelhouse" / part
    listing = sorted(f"{p.name}:{p.stat().st_size}" for p in wheelhouse.glob("*.whl"))
    digest = hashlib.sha256("|".join(listing).encode()).hexdigest()[:16]
    tag = f"{IMAGE_PREFIX}/wheels-{part}:{digest}"
    if not image_exists(tag, env):
        log(f"importing {len(listing)} wheels as {tag}")
        tar = subprocess.run(
            ["tar", "-C", str(wheelhouse), "--transform", "s,^\\.,wheels,", "-c", "."],
            capture_output=True,
            check=True,
        )
        run(["docker", "import", "-", tag], env, input_bytes=tar.stdout)
    return tag


def _redis_image(base: str, env: Mapping[str, str], log: Log) -> str:
    debs = ROOT / "build" / "redis-debs"
    if not list(debs.glob("redis-server_*.deb")):
        debs.mkdir(parents=True, exist_ok=True)
        log(f"downloading Debian's {', '.join(REDIS_PACKAGES)} into {debs}")
        download = ["apt-get", "download", *REDIS_PACKAGES]
        if run(download, env, cwd=debs, check=False).returncode != 0:
            if os.geteuid() != 0:
                raise DockerUnavailable("apt-get download of redis-server failed (no apt lists)")
            run(["apt-get", "update", "-qq"], env)
            run(download, env, cwd=debs)
    names = sorted(p.name for p in debs.glob("*.deb"))
    dockerfile = (ROOT / "deploy/test/redis.Dockerfile").read_text()
    tag = (
        f"{IMAGE_PREFIX}/redis:"
        + hashlib.sha256("|".join([image_id(base, env), dockerfile, *names]).encode()).hexdigest()[
            :16
        ]
    )
    if not image_exists(tag, env):
        log(f"building {tag} from {len(names)} Debian packages")
        run(
            [
                "docker",
                "build",
                "--quiet",
                "-f",
                str(ROOT / "deploy/test/redis.Dockerfile"),
                "--build-arg",
                f"BASE_IMAGE={base}",
                "-t",
                tag,
                str(debs),
            ],
            {**env, "DOCKER_BUILDKIT": "0"},
        )
    return tag


def stale_tags(listing: Iterable[str], keep: set[str], now: datetime) -> list[str]:
    """Of ``docker image ls`` lines ``NAME:TAG|CREATED``, the tags not kept and a day old
    (another clone testing on the engine may have built a younger one, not yet used)."""
    old = []
    for name, _, created in (line.partition("|") for line in listing):
        with contextlib.suppress(ValueError):  # a date it cannot read: the tag is kept
            if now - datetime.strptime(created[:25], "%Y-%m-%d %H:%M:%S %z") > timedelta(1):
                old.append(name)
    return [n for n in old if n not in keep and not n.endswith(":<none>")]


def _remove_other_tags(images: Images, env: Mapping[str, str]) -> None:
    """Older content-hash tags of the test images: not needed again, gigabytes each."""
    keep = {images.service_image(s) for s in BUILT_SERVICES}
    keep |= {images.wheels, images.embedder_wheels, images.redis}
    listing = "{{.Repository}}:{{.Tag}}|{{.CreatedAt}}"
    listed = run(["docker", "image", "ls", "--format", listing, f"{IMAGE_PREFIX}/*"], env)
    stale = stale_tags(listed.stdout.splitlines(), keep, datetime.now(UTC))
    if stale:
        run(["docker", "image", "rm", *stale], env, check=False)


@dataclass
class ComposeStack:
    """One Compose project of the test stack: ``up``, ``down``, the CLI, kills."""

    env: dict[str, str]
    project: str = field(default_factory=lambda: f"contreact-e2e-{uuid.uuid4().hex[:8]}")
    compose: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.compose:
            self.compose = compose_argv(self.env)

    def __call__(
        self, *args: str, timeout: float = 600, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        argv = [*self.compose, "-p", self.project, *compose_files(), *args]
        return run(argv, self.env, timeout=timeout, check=check)

    def up(self, scale: Mapping[str, int], *, timeout: float = 300) -> float:
        """Start the stack and wait until every container is healthy; seconds taken."""
        start = time.monotonic()
        scales = [arg for name, n in scale.items() for arg in ("--scale", f"{name}={n}")]
        self("up", "-d", "--no-build", *scales, *STACK_SERVICES, timeout=timeout)
        self.wait_healthy(timeout=timeout - (time.monotonic() - start))
        return time.monotonic() - start

    def down(self, *, volumes: bool = False) -> None:
        self("down", "--timeout", "20", *(["--volumes"] if volumes else []), timeout=300)

    def containers(self, service: str | None = None, *, running: bool = True) -> list[str]:
        filters = ["--filter", f"label=com.docker.compose.project={self.project}"]
        if service:
            filters += ["--filter", f"label=com.docker.compose.service={service}"]
        flags = [] if running else ["--all"]
        out = run(["docker", "ps", "-q", *flags, *filters], self.env).stdout
        return sorted(out.split())

    def inspect(self, container: str) -> dict[str, Any]:
        out = run(["docker", "inspect", container], self.env).stdout
        return dict(json.loads(out)[0])

    def health(self) -> dict[str, str]:
        """Container name -> health (or state, for one without a health check)."""
        states = {}
        for container in self.containers(running=False):
            info = self.inspect(container)
            state = info["State"]
            states[info["Name"].lstrip("/")] = state.get("Health", {}).get(
                "Status", state["Status"]
            )
        return states

    def wait_healthy(self, *, timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout
        while True:
            states = self.health()
            if states and all(s == "healthy" for s in states.values()):
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"not healthy after {timeout:.0f} s: {states}\n{self.logs()}")
            time.sleep(1)

    def docker_kill(self, container: str) -> None:
        """`docker kill`: the container stops for good (a manual stop: no restart)."""
        run(["docker", "kill", container], self.env)

    def crash(self, container: str) -> None:
        """SIGKILL the container's init from the host, as a crash would end it: the
        restart policy starts it again (same container, same host name)."""
        pid = int(self.inspect(container)["State"]["Pid"])
        if pid > 0:
            os.kill(pid, signal.SIGKILL)

    def restarts(self, container: str) -> int:
        return int(self.inspect(container)["RestartCount"])

    def cli(self, *commands: Sequence[str], timeout: float = 300) -> list[tuple[int, str, str]]:
        """Run ``contreact`` commands one after another in one cli container (one
        container start for all); returns each one's exit code, stdout and stderr."""
        script = (
            "import json, subprocess, sys\n"
            "out = []\n"
            "for argv in json.loads(sys.argv[1]):\n"
            "    p = subprocess.run(['contreact', *argv], capture_output=True, text=True)\n"
            "    out.append([p.returncode, p.stdout, p.stderr])\n"
            "print(json.dumps(out))\n"
        )
        proc = self(
            "run",
            "--rm",
            "-T",
            "--entrypoint",
            "python3",
            "cli",
            "-c",
            script,
            json.dumps([list(c) for c in commands]),
            timeout=timeout,
        )
        results = json.loads(proc.stdout.strip().splitlines()[-1])
        return [(int(code), str(out), str(err)) for code, out, err in results]

    def logs(self, tail: int = 40) -> str:
        proc = self("logs", "--no-color", "--tail", str(tail), check=False, timeout=60)
        return proc.stdout[-8000:]


def main() -> int:
    """`python3 -m tests.support.compose_stack`: make the engine answer and build every
    image, as the docker test's fixtures do (what `make test` starts in the background
    at once, so that the images build while the packages install and the first tests
    run: the build uses one core for 10 minutes cold, the install mostly the other).
    Needs only the standard library and a Python 3.11 with pip (for the wheelhouse)."""
    import sys

    try:
        env = {**os.environ, "DOCKER_HOST": ensure_engine()}
        images = prepare_images(env)
    except (DockerUnavailable, RuntimeError, subprocess.SubprocessError, OSError) as exc:
        print(f"early image build: {exc}", file=sys.stderr)
        return 1
    print(f"images {images.tag} ({'built' if images.built else 'cached'}): {images.seconds}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
