"""A model's pool of hosts: which host a run's calls go to. Pure: no Redis, no clock.

* **Sticky.** A run's calls go to its host (its *pin*) while that host is up, so a
  history that grows call after call reuses the server's prompt cache. When its host is
  at its concurrency limit the call waits for a slot there (it does not spill over:
  runs are spread evenly, so the hosts are loaded evenly).
* **Even.** A run without a pin (its first call), or whose host is down, is pinned to
  the up host with the fewest live runs pinned to it. Ties go by a hash of (run, host):
  runs placed at the same moment by several workers spread without talking to each
  other, and the same inputs always give the same host.
* **Down.** A call that cannot reach its host (a refused or reset connection, no
  connection within ``connect_timeout_s``, no answer within ``timeout_s``) marks the
  host down for ``host_down_s`` and moves at once to another host; a host comes back
  by itself when that time has passed (the next call placed there is its probe: if it
  fails, the host is down again). A call that got an answer, an error one included
  (HTTP 4xx/5xx), found its host up.
* **Where it runs.** ``pool_state.PLACE_SCRIPT`` applies this policy atomically in
  Redis, on the route's pins (``tests/integration/test_gpu_pool.py`` holds the two
  together on random states); this module is its specification.
* **All down.** When no host of the pool is up, the call ends as a failure that names
  every host and why (``all_down``): the run fails with that line, as a run whose one
  host is down does.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping, Sequence


def choose_host(
    run_id: str,
    hosts: Sequence[str],
    *,
    pin: str | None,
    down: Collection[str],
    pinned: Mapping[str, int],
) -> str | None:
    """The host for ``run_id``'s next call: its pin while the pin is up and in the
    pool, else the up host with the fewest runs ``pinned`` (then the hash order).
    None: every host is down."""
    up = [host for host in hosts if host not in down]
    if pin is not None and pin in up:
        return pin
    if not up:
        return None
    return min(up, key=lambda host: (pinned.get(host, 0), tie_break(run_id, host)))


def tie_break(run_id: str, host: str) -> str:
    """A stable order of the hosts for one run (the same on every worker)."""
    return hashlib.sha256(f"{run_id}\n{host}".encode()).hexdigest()


def pinned_counts(pins: Mapping[str, str], live: Collection[str]) -> dict[str, int]:
    """Live runs pinned to each host (``pins``: run -> host; ``live``: the runs not ended:
    in Redis, those whose pin was used within ``pool_state.PIN_IDLE_MS``)."""
    counts: dict[str, int] = {}
    for run_id, host in pins.items():
        if run_id in live:
            counts[host] = counts.get(host, 0) + 1
    return counts


POOL_FIX = {
    "ollama": "(`ollama serve`), or fix ollama_client_config.hosts",
    "openai": "(vLLM, llama.cpp's server), or fix openai_client_config.base_urls",
}
"""How to bring a pool back, by backend."""


def all_down(
    model: str, hosts: Sequence[str], why: Mapping[str, str], backend: str = "ollama"
) -> str:
    """The one line a call gets when no host of its pool is up."""
    each = "; ".join(f"{host}: {why.get(host) or 'down'}" for host in hosts)
    fix = POOL_FIX.get(backend, POOL_FIX["ollama"])
    return (
        f"every host of the pool for model '{model}' is down ({each}): start the model "
        f"server on one of them {fix}"
    )
