"""The environment of a stack a test starts (`contreact up` and the CLI around it).

A test's stack shares nothing with whatever the user runs on the machine (`make demo`
leaves a supervisor, its Redis on 6390 and the dashboard on 8765 running): every port
is a free one, the data dir (pid files, logs, archive, memory database) is the test's
own, and no ``CONTREACT_*`` setting of the user's shell leaks in, except the few that
only say where a read-only tool or model file is.
"""

from __future__ import annotations

import os
from pathlib import Path

from contreact_bus.local_redis import free_port

DEFAULT_PORTS = (8765, 6390)
"""The dashboard's and the local Redis's default ports (``CONTREACT_UI_PORT``,
``CONTREACT_LOCAL_REDIS_PORT``): a test stack never takes them."""

PASSED_THROUGH = frozenset(
    {"CONTREACT_CHROMIUM", "CONTREACT_LLM_GGUF_PATH", "CONTREACT_EMBED_MODEL_PATH"}
)
"""``CONTREACT_*`` variables of the user's shell a test stack keeps: where files are
that it only reads. ``CONTREACT_TEST_*`` are kept too (the tests' own switches)."""


def _kept(name: str) -> bool:
    if name in ("REDIS_URL", "REDIS_SENTINELS", "REDIS_MASTER_NAME"):
        return False
    if not name.startswith("CONTREACT_"):
        return True
    return name in PASSED_THROUGH or name.startswith("CONTREACT_TEST_")


def stack_environment(
    data_dir: Path, *, redis_url: str | None = None, **extra: str
) -> dict[str, str]:
    """The environment for a test stack in ``data_dir``: the dashboard and (with
    ``redis_url`` None) the Redis `up` starts on free ports; ``extra`` last."""
    env = {name: value for name, value in os.environ.items() if _kept(name)}
    env.update(CONTREACT_DATA_DIR=str(data_dir), CONTREACT_UI_PORT=str(free_port()))
    if redis_url is None:
        env["CONTREACT_LOCAL_REDIS_PORT"] = str(free_port())
    else:
        env["REDIS_URL"] = redis_url
    env.update(extra)
    return env
