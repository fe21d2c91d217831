"""Which waiting call to start next, and on which host. Pure: no Redis, no clock.

Each route (backend, model, host pool) is one FIFO line, and a run has at most one
call waiting at a time, so taking a route's calls in order is round robin over its
runs. Across routes, ``model_aware`` (the default) orders the attempts by what they
cost the host:

0. ``warm``: the host holds the model and has a free slot for it;
1. ``load``: the host has room to load one more model;
2. ``swap``: a loaded model is idle, no call of it waits and none of its runs is
   still going (so none will call it again), and it is past its keep-warm time (a
   margin, 0 by default): it makes room;
3. ``drain``: the route has waited longer than ``max_wait_ms`` without a call
   started: the host's least recently used model is asked to drain (no new calls),
   so that a model kept busy by its runs cannot hold the host forever.

Within a class, a run's line before a background line (assessment jobs' calls: they
wait behind live runs and never ask a host to drain), then the route with more
waiting runs first (a load serves them all), then the one that waited longer. The
scripts in ``host_slots`` decide for real and atomically; this order only avoids
asking for what cannot be had.

``fifo``, the naive order kept for the benchmark's contrast, takes the route that
waited longest whatever the host holds, and lets the host load what it is asked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from contreact_llm.scheduling.host_slots import HostLimits, HostView

Policy = Literal["model_aware", "fifo"]
Placement = Literal["warm", "load", "swap", "drain", "any"]
_RANK: dict[Placement, int] = {"warm": 0, "load": 1, "swap": 2, "drain": 3, "any": 0}


@dataclass(frozen=True)
class Waiting:
    """A route with calls waiting: how many, and since when none of them started."""

    route_id: str
    model: str
    hosts: tuple[str, ...]
    count: int
    since_ms: int
    background: bool = False
    """Assessment jobs' calls: after runs' calls, and never a reason to drain a model."""


@dataclass(frozen=True)
class Attempt:
    route_id: str
    host: str
    placement: Placement
    protect: tuple[str, ...]
    """Models with calls waiting for this host: not to be swapped out for this one."""
    max_loaded: int
    """The loaded-model limit the slot script applies (0 for the naive order)."""

    @property
    def may_drain(self) -> bool:
        return self.placement == "drain"


def plan(
    waiting: Sequence[Waiting],
    views: Mapping[str, HostView],
    limits: Mapping[str, HostLimits],
    *,
    now_ms: int,
    keep_warm_ms: int,
    max_wait_ms: int,
    in_use: Mapping[str, frozenset[str]] | None = None,
    policy: Policy = "model_aware",
) -> list[Attempt]:
    """The attempts worth making now, best first (at most one per route and host).
    ``in_use``: per host, the models whose runs are still going (they will call again:
    never swapped out, like the models with calls waiting)."""
    wanted: dict[str, set[str]] = {host: set(models) for host, models in (in_use or {}).items()}
    for route in waiting:
        for host in route.hosts:
            wanted.setdefault(host, set()).add(route.model)
    ranked: list[tuple[tuple[int, int, int, int, int], Attempt]] = []
    for route in waiting:
        for order, host in enumerate(route.hosts):
            limit = limits.get(host)
            if limit is None:
                continue
            view = views.get(host)
            if view is None:  # not looked at: a host without a model limit
                view = HostView(host, now_ms)
            placement = _placement(route, view, limit, wanted[host], now_ms, keep_warm_ms)
            if policy == "fifo":
                placement = "any" if view.inflight.get(route.model, 0) < limit.parallel else None
            elif (
                placement is None
                and not route.background
                and now_ms - route.since_ms >= max_wait_ms
            ):
                placement = None if view.draining else "drain"  # one drain at a time
            if placement is None:
                continue
            spread = view.inflight.get(route.model, 0) * len(route.hosts) + order
            key = (_RANK[placement], int(route.background), -route.count, route.since_ms, spread)
            if policy == "fifo":
                key = (0, 0, 0, route.since_ms, spread)
            protect = tuple(sorted(wanted[host] - {route.model}))
            max_loaded = 0 if policy == "fifo" else limit.max_loaded
            ranked.append((key, Attempt(route.route_id, host, placement, protect, max_loaded)))
    ranked.sort(key=lambda item: item[0])
    return [attempt for _key, attempt in ranked]


def _placement(
    route: Waiting,
    view: HostView,
    limit: HostLimits,
    wanted: set[str],
    now_ms: int,
    keep_warm_ms: int,
) -> Placement | None:
    model = route.model
    if model in view.draining or view.inflight.get(model, 0) >= limit.parallel:
        return None
    if limit.max_loaded <= 0 or model in view.loaded:
        return "warm"
    if len(view.loaded) < limit.max_loaded:
        return "load"
    for other, used in view.loaded.items():
        idle = view.inflight.get(other, 0) == 0
        evictable = other in view.draining or (
            other not in wanted and used + keep_warm_ms <= now_ms
        )
        if idle and evictable:
            return "swap"
    return None
