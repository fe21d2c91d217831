"""The platform as a Docker Swarm stack, for the swarm e2e test.

``Registry`` is Debian's docker-registry started by ``deploy/registry.sh``: its run
files in build/registry, its storage in the user's cache (``registry_storage``), so
layers pushed once, by any clone, are not compressed and pushed again. ``ensure_swarm``
makes the engine a swarm manager (a one-node swarm: `docker swarm init`, left in place
for the next run). ``SwarmStack`` drives one stack: ``deploy/stack.sh push`` and
``deploy``, the services' tasks, a task's container killed, a rolling update, `docker
stack rm`, and the contreact CLI as a container on the stack's network. With
docker-stack.sentinel.yml too (a Redis that fails over): the primary the sentinels name,
a Redis client that follows it through the servers' published ports, and the CLI
reaching Redis through the sentinels.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import redis

from contreact_bus.local_redis import free_port
from tests.support.compose_stack import ROOT, DockerUnavailable, Images, run
from tests.support.swarm_redis import (
    MASTER_NAME,
    REDIS_SERVERS,
    SENTINEL_LABELS,
    SENTINELS,
    following_client,
)

SERVICES = ("redis", "orchestrator", "llm-worker", "memory", "embedder", "ui", "assessor")
LABELS = ("contreact.redis", "contreact.data", "contreact.ui", "contreact.gpu")
STACK_FILE = ROOT / "docker-stack.yml"
SENTINEL_FILE = ROOT / "docker-stack.sentinel.yml"


def registry_storage() -> Path:
    """Where the test registry keeps its layers: the user's cache, as the llama.cpp
    wheel (deploy/llama-wheel.sh), not the clone's build/, so a fresh clone does not
    compress and push every layer again (dockerd spent 48 CPU-s on the embedder image
    alone; with the layers there, 0.01). Layers of images built since stay there:
    remove the folder to free them (``CONTREACT_TEST_REGISTRY_DATA`` puts it elsewhere)."""
    chosen = os.environ.get("CONTREACT_TEST_REGISTRY_DATA")
    if chosen:
        return Path(chosen)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "contreact" / "registry"


@dataclass
class Registry:
    address: str
    directory: Path

    @classmethod
    def start(cls, env: Mapping[str, str]) -> Registry:
        directory = ROOT / "build" / "registry"
        address = f"127.0.0.1:{free_port()}"
        script_env = {
            **env,
            "CONTREACT_REGISTRY_ADDR": address,
            "CONTREACT_REGISTRY_DIR": str(directory),
            "CONTREACT_REGISTRY_DATA": str(registry_storage()),
        }
        proc = run(["bash", str(ROOT / "deploy/registry.sh")], script_env, check=False)
        if proc.returncode != 0:
            raise DockerUnavailable(proc.stderr.strip().splitlines()[-1])
        return cls(address, directory)

    def stop(self) -> None:
        env = {
            **os.environ,
            "CONTREACT_REGISTRY_ADDR": self.address,
            "CONTREACT_REGISTRY_DIR": str(self.directory),
        }
        run(["bash", str(ROOT / "deploy/registry.sh"), "stop"], env, check=False)

    def push(self, image: str, env: Mapping[str, str]) -> str:
        """``image`` tagged into this registry and pushed; the new name."""
        name = f"{self.address}/{image}"
        run(["docker", "tag", image, name], env)
        run(["docker", "push", "--quiet", name], env, timeout=1800)
        return name


def ensure_swarm(env: Mapping[str, str]) -> str:
    """The engine as a swarm manager (`docker swarm init` when it is in none, on the
    address of its default route); returns this node's id. Every label is put on it."""
    state = _swarm_state(env)
    if state == "inactive":
        address = default_address()
        proc = run(["docker", "swarm", "init", "--advertise-addr", address], env, check=False)
        if proc.returncode != 0 and "already part of a swarm" not in proc.stderr:
            raise DockerUnavailable(f"docker swarm init failed: {proc.stderr.strip()}")
        state = _swarm_state(env)
    if state != "active true":
        raise DockerUnavailable(f"the engine is in a swarm but not a manager of it ({state})")
    node = run(["docker", "info", "--format", "{{.Swarm.NodeID}}"], env).stdout.strip()
    labels = (*LABELS, *SENTINEL_LABELS)
    adds = [arg for label in labels for arg in ("--label-add", f"{label}=true")]
    run(["docker", "node", "update", *adds, node], env)
    return node


def _swarm_state(env: Mapping[str, str]) -> str:
    fmt = "{{.Swarm.LocalNodeState}} {{.Swarm.ControlAvailable}}"
    out = run(["docker", "info", "--format", fmt], env).stdout.strip()
    return "inactive" if out.startswith("inactive") else out


def default_address() -> str:
    out = run(["ip", "-o", "route", "get", "1.1.1.1"], os.environ).stdout.split()
    return out[out.index("src") + 1]


@dataclass
class SwarmStack:
    """One stack of the platform: its name, deploy settings and the CLI's image."""

    env: dict[str, str]
    images: Images
    configs: Path
    servers: list[str]
    """The model servers outside the stack (URLs): the pool the runs' configs name."""
    name: str = field(default_factory=lambda: f"crsw{uuid.uuid4().hex[:6]}")

    def __call__(
        self, *args: str, timeout: float = 600, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        return run(list(args), self.env, timeout=timeout, check=check)

    def script(self, *args: str, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
        """``deploy/stack.sh ARGS`` as users run it (exit 0 asserted by the caller)."""
        return run(
            ["bash", str(ROOT / "deploy/stack.sh"), *args], self.env, check=False, timeout=timeout
        )

    def deploy(self, *, timeout: float = 600) -> float:
        """``deploy/stack.sh deploy NAME``, then every service at its replicas (a task
        counts once healthy); seconds taken."""
        start = time.monotonic()
        proc = self.script("deploy", self.name)
        assert proc.returncode == 0, proc.stderr
        self.wait_converged(timeout=timeout)
        return time.monotonic() - start

    @property
    def through_sentinels(self) -> bool:
        """Deployed with docker-stack.sentinel.yml (CONTREACT_STACK_FILE)."""
        return SENTINEL_FILE.name in self.env.get("CONTREACT_STACK_FILE", "")

    @property
    def services(self) -> tuple[str, ...]:
        extra = (*REDIS_SERVERS, *SENTINELS) if self.through_sentinels else ()
        return tuple(dict.fromkeys((*SERVICES, *extra)))

    def service(self, name: str) -> str:
        return f"{self.name}_{name}"

    def primary(self) -> str:
        """The Redis server the sentinels name the primary (the first that answers)."""
        for sentinel in SENTINELS:
            for container in self.tasks(sentinel).values():
                try:
                    proc = self(
                        "docker", "exec", "-e", f"REDISCLI_AUTH={self.env['REDIS_PASSWORD']}",
                        container, "timeout", "5", "redis-cli", "-p", "26379", "--raw",
                        "sentinel", "get-master-addr-by-name", MASTER_NAME,
                        check=False, timeout=30,
                    )  # fmt: skip
                except subprocess.TimeoutExpired:
                    continue  # the engine is busy: ask the next
                named = proc.stdout.split()[:1]
                if proc.returncode == 0 and named and named[0] in REDIS_SERVERS:
                    return named[0]
        raise AssertionError(f"no sentinel names a primary\n{self.task_errors()}")

    def wait_for_new_primary(self, old: str, *, timeout: float = 120) -> str:
        deadline = time.monotonic() + timeout
        while True:
            try:
                named = self.primary()
            except AssertionError:  # no sentinel answers just now
                named = old
            if named != old:
                return named
            if time.monotonic() > deadline:
                raise AssertionError(f"no replica was promoted within {timeout} s")
            time.sleep(0.2)

    def published(self, server: str) -> int:
        return int(self.env[REDIS_SERVERS[server]])

    def role(self, server: str) -> list[str]:
        """ROLE of a Redis server, through its published port: ["master", ...] or
        ["slave", PRIMARY'S NAME, ...]."""
        client = redis.Redis(
            port=self.published(server), password=self.env["REDIS_PASSWORD"],
            socket_timeout=5, decode_responses=True,
        )  # fmt: skip
        try:
            return [str(part) for part in client.role()[:2]]
        finally:
            client.close()

    def client(self) -> redis.Redis:
        """A client of Redis from the host: the published port of the plain stack's
        one Redis, or, through sentinels, of whichever server is the primary (each
        connection asks the servers' ROLE; a command that meets none retries for a
        minute, so a failover is waited out). The sentinels announce the servers'
        names on the stack's network, which the host cannot resolve."""
        password = self.env["REDIS_PASSWORD"]
        if not self.through_sentinels:
            return redis.Redis(port=int(self.env["CONTREACT_REDIS_PORT"]), password=password)
        return following_client([self.published(server) for server in REDIS_SERVERS], password)

    def replicas(self) -> dict[str, tuple[int, int]]:
        """Service -> (tasks running, tasks wanted)."""
        out = self(
            "docker",
            "service",
            "ls",
            "--filter",
            f"label=com.docker.stack.namespace={self.name}",
            "--format",
            "{{.Name}} {{.Replicas}}",
        ).stdout
        counts = {}
        for line in out.splitlines():
            name, replicas = line.split()[:2]
            running, wanted = replicas.split("/")
            counts[name.removeprefix(f"{self.name}_")] = (int(running), int(wanted))
        return counts

    def wait_converged(self, *, timeout: float = 600) -> None:
        deadline = time.monotonic() + timeout
        while True:
            counts = self.replicas()
            if set(counts) == set(self.services) and all(r == w for r, w in counts.values()):
                return
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"not converged after {timeout:.0f} s: {counts}\n{self.task_errors()}"
                )
            time.sleep(1)

    def task_errors(self) -> str:
        out = self(
            "docker",
            "stack",
            "ps",
            "--no-trunc",
            "--format",
            "{{.Name}} {{.CurrentState}} {{.Error}}",
            self.name,
            check=False,
        )
        return out.stdout[-4000:] + out.stderr[-1000:]

    def tasks(self, service: str) -> dict[str, str]:
        """The running tasks of a service: task id -> its container id."""
        out = self(
            "docker",
            "ps",
            "-q",
            "--filter",
            f"label=com.docker.swarm.service.name={self.service(service)}",
        ).stdout.split()
        tasks = {}
        for container in out:
            task = self(
                "docker",
                "inspect",
                "--format",
                '{{index .Config.Labels "com.docker.swarm.task.id"}}',
                container,
            )
            tasks[task.stdout.strip()] = container
        return tasks

    def kill_task(self, service: str) -> str:
        """`docker kill` one task's container: swarm replaces the task."""
        task, container = sorted(self.tasks(service).items())[0]
        self("docker", "kill", container)
        return task

    def update(self, service: str, *flags: str) -> None:
        """A rolling update, not waited for (`--detach`)."""
        self("docker", "service", "update", "--detach", *flags, self.service(service))

    def update_state(self, service: str) -> str:
        out = self(
            "docker",
            "service",
            "inspect",
            "--format",
            "{{if .UpdateStatus}}{{.UpdateStatus.State}}{{end}}",
            self.service(service),
        )
        return out.stdout.strip()

    def wait_updated(self, service: str, *, timeout: float = 600) -> None:
        deadline = time.monotonic() + timeout
        while (state := self.update_state(service)) != "completed":
            if time.monotonic() > deadline or state in ("paused", "rollback_completed"):
                raise AssertionError(f"the update of {service} is {state!r}\n{self.task_errors()}")
            time.sleep(1)

    def remove(self, *, timeout: float = 300) -> float:
        """`docker stack rm`, and wait until its containers and network are gone (the
        removal is asynchronous); seconds taken. The volumes stay."""
        start = time.monotonic()
        # It can fail to remove the network while a task is still stopping ("in use by
        # task"): the network is removed again below, once the containers are gone.
        self("docker", "stack", "rm", self.name, check=False)
        deadline = time.monotonic() + timeout
        label = f"label=com.docker.stack.namespace={self.name}"
        while True:
            left = self("docker", "ps", "-aq", "--filter", label).stdout.split()
            nets = self("docker", "network", "ls", "-q", "--filter", label).stdout.split()
            if not left and not nets:
                return time.monotonic() - start
            if not left:
                self("docker", "network", "rm", *nets, check=False)
            if time.monotonic() > deadline:
                raise AssertionError(f"stack rm left {left} {nets}")
            time.sleep(1)

    def volumes(self) -> list[str]:
        out = self(
            "docker",
            "volume",
            "ls",
            "-q",
            "--filter",
            f"label=com.docker.stack.namespace={self.name}",
        ).stdout
        return sorted(out.split())

    def cli(self, *commands: Sequence[str], timeout: float = 900) -> list[tuple[int, str, str]]:
        """``contreact`` commands in one container of the CLI's image on the stack's
        network, with the stack's volumes and the configs (as `docker compose run cli`),
        one after another in one Python process (the CLI's own ``main``: one start and
        one import for all, which is most of a short command's time on two loaded
        cores). The time-out guards a hang only."""
        script = (
            "import contextlib, io, json, sys\n"
            "from contreact_cli.main import main\n"
            "out = []\n"
            "for argv in json.loads(sys.argv[1]):\n"
            "    stdout, stderr, code = io.StringIO(), io.StringIO(), 0\n"
            "    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):\n"
            "        try:\n"
            "            main(argv)\n"
            "        except SystemExit as exc:\n"
            "            code = exc.code if isinstance(exc.code, int) else 1\n"
            "    out.append([code, stdout.getvalue(), stderr.getvalue()])\n"
            "print(json.dumps(out))\n"
        )
        proc = self(
            "docker", "run", "--rm", "--network", f"{self.name}_backend",
            "-e", f"REDIS_URL=redis://:{self.env['REDIS_PASSWORD']}@redis:6379/0",
            *(["-e", f"REDIS_SENTINELS={','.join(f'{s}:26379' for s in SENTINELS)}",
               "-e", f"REDIS_MASTER_NAME={MASTER_NAME}"] if self.through_sentinels else []),
            "-v", f"{self.name}_runs:/data/runs:ro", "-v", f"{self.name}_memory:/data/memory",
            "-v", f"{self.configs}:/configs:ro", "--entrypoint", "python3",
            f"{self.env['CONTREACT_IMAGE_PREFIX']}/cli:{self.images.tag}",
            "-c", script, json.dumps([list(c) for c in commands]),
            timeout=timeout,
        )  # fmt: skip
        results = json.loads(proc.stdout.strip().splitlines()[-1])
        return [(int(code), str(out), str(err)) for code, out, err in results]

    def logs(self, service: str, tail: int = 40) -> str:
        proc = self(
            "docker",
            "service",
            "logs",
            "--no-task-ids",
            "--tail",
            str(tail),
            self.service(service),
            check=False,
            timeout=60,
        )
        return (proc.stdout + proc.stderr)[-4000:]

    def destroy(self) -> None:
        """Everything the stack left: its services, network, volumes and secret."""
        self("docker", "stack", "rm", self.name, check=False)
        deadline = time.monotonic() + 120
        label = f"label=com.docker.stack.namespace={self.name}"
        while self("docker", "ps", "-aq", "--filter", label).stdout.split():
            if time.monotonic() > deadline:
                break
            time.sleep(1)
        volumes = self.volumes()
        if volumes:
            self("docker", "volume", "rm", *volumes, check=False)
        self("docker", "secret", "rm", self.env["CONTREACT_OPENROUTER_SECRET"], check=False)


def stand_in(env: Mapping[str, str], image: str, latency: float) -> tuple[str, str]:
    """A model server outside the stack, as a GPU host runs one (the project's Ollama
    stand-in on the host's network, on a free port); (container, its URL)."""
    port = free_port()
    container = run(
        [
            "docker",
            "run",
            "-d",
            "--network",
            "host",
            image,
            f"--port={port}",
            "--pullable=stand-in-a:1b=1300000000",
            "--pullable=stand-in-b:3b=2000000000",
            f"--latency={latency}",
        ],
        env,
    ).stdout.strip()
    return container, f"http://{default_address()}:{port}"
