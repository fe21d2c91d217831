"""Each Python process's own CPU, written when it exits: with this folder on
``PYTHONPATH`` and ``PROC_PROFILE_DIR`` set, every Python process started below (the
CLI's commands, the services `contreact up` starts, pip, the xdist workers) writes
``DIR/<pid>.json``; ``python -m tools.process_profile DIR`` adds them up. A process
killed by a signal it does not handle writes nothing."""

from __future__ import annotations

import atexit
import json
import os
import resource
import sys
import time

_FOLDER = os.environ.get("PROC_PROFILE_DIR")
_STARTED = time.monotonic()


def _write() -> None:
    own = resource.getrusage(resource.RUSAGE_SELF)
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    record = {
        "name": spec.name if spec is not None else (sys.argv[0] if sys.argv else "?"),
        "argv": sys.argv[:4],
        "cpu": own.ru_utime + own.ru_stime,
        "wall": time.monotonic() - _STARTED,
    }
    try:
        with open(os.path.join(str(_FOLDER), f"{os.getpid()}.json"), "w") as handle:
            json.dump(record, handle)
    except OSError:  # a profile never fails the process it watches
        pass


if _FOLDER:
    atexit.register(_write)
