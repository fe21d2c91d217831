"""Which waiting call starts next, and where: the pure order of ``placement.plan``."""

from __future__ import annotations

from contreact_llm.scheduling.host_slots import HostLimits, HostView
from contreact_llm.scheduling.placement import Waiting, plan

H1, H2 = "http://gpu1:11434", "http://gpu2:11434"
NOW = 100_000
LIMITS = {H1: HostLimits(parallel=2, max_loaded=2), H2: HostLimits(parallel=2, max_loaded=2)}


def waiting(
    model: str, count: int = 1, since: int = NOW, hosts: tuple[str, ...] = (H1,)
) -> Waiting:
    return Waiting(f"r-{model}", model, hosts, count, since)


def view(host: str = H1, loaded: dict[str, int] | None = None, **inflight: int) -> HostView:
    return HostView(host, NOW, inflight=dict(inflight), loaded=loaded or {})


def order(attempts: list) -> list[tuple[str, str, str]]:  # type: ignore[type-arg]
    return [(a.route_id, a.host, a.placement) for a in attempts]


def make(*routes: Waiting, views: dict[str, HostView], **kwargs: object) -> list:  # type: ignore[type-arg]
    options: dict[str, object] = {"keep_warm_ms": 2000, "max_wait_ms": 60_000, **kwargs}
    return plan(list(routes), views, LIMITS, now_ms=NOW, **options)  # type: ignore[arg-type]


def test_loaded_models_go_first_then_room_then_a_swap() -> None:
    loaded = {"a": NOW - 10_000, "b": NOW - 10_000}
    attempts = make(
        waiting("c", count=5),
        waiting("a"),
        views={H1: view(loaded=loaded)},
    )
    # c would need a swap; b is idle and nobody waits for it: after a.
    assert order(attempts) == [("r-a", H1, "warm"), ("r-c", H1, "swap")]
    assert attempts[1].protect == ("a",)


def test_a_model_kept_warm_busy_or_wanted_is_not_swapped_out() -> None:
    warm = {"a": NOW - 500, "b": NOW - 500}  # both used within keep_warm: between steps
    assert make(waiting("c"), views={H1: view(loaded=warm)}) == []
    old = {"a": NOW - 10_000, "b": NOW - 10_000}
    assert make(waiting("c"), views={H1: view(loaded=old, a=1, b=1)}) == []  # both busy
    # b is idle and old, but one of its calls waits (with both slots of b taken): it stays.
    assert make(waiting("c"), waiting("b"), views={H1: view(loaded=old, a=1, b=2)}) == []
    # once nobody waits for b, c may take its place
    assert order(make(waiting("c"), views={H1: view(loaded=old, a=1)})) == [("r-c", H1, "swap")]


def test_free_room_loads_before_a_swap_and_more_waiting_runs_first() -> None:
    attempts = make(
        waiting("x", count=1, since=NOW - 50),
        waiting("y", count=3, since=NOW),
        views={H1: view(loaded={"a": NOW})},
    )
    assert order(attempts) == [("r-y", H1, "load"), ("r-x", H1, "load")]


def test_full_models_are_left_alone_and_a_pool_spreads_the_calls() -> None:
    both = (H1, H2)
    attempts = make(
        waiting("a", count=3, hosts=both),
        views={H1: view(H1, loaded={"a": NOW}, a=1), H2: view(H2, loaded={"a": NOW})},
    )
    assert order(attempts) == [("r-a", H2, "warm"), ("r-a", H1, "warm")]
    full = make(waiting("a", hosts=both), views={H1: view(H1, {"a": NOW}, a=2), H2: view(H2)})
    assert order(full) == [("r-a", H2, "load")]


def test_a_route_waiting_too_long_asks_for_a_drain_once() -> None:
    busy = {"a": NOW, "b": NOW}
    fresh = make(waiting("c", since=NOW - 1000), views={H1: view(loaded=busy, a=1, b=1)})
    assert fresh == []
    starving = make(waiting("c", since=NOW - 60_000), views={H1: view(loaded=busy, a=1, b=1)})
    assert order(starving) == [("r-c", H1, "drain")] and starving[0].may_drain
    draining = HostView(H1, NOW, {"a": 1, "b": 1}, busy, frozenset({"a"}))
    assert make(waiting("c", since=NOW - 60_000), views={H1: draining}) == []
    drained = HostView(H1, NOW, {"b": 1}, busy, frozenset({"a"}))
    assert order(make(waiting("c", since=NOW - 60_000), views={H1: drained})) == [
        ("r-c", H1, "swap")
    ]


def test_fifo_takes_the_oldest_whatever_the_host_holds() -> None:
    attempts = make(
        waiting("a", count=4, since=NOW),
        waiting("c", since=NOW - 500),
        views={H1: view(loaded={"a": NOW, "b": NOW})},
        policy="fifo",
    )
    assert order(attempts) == [("r-c", H1, "any"), ("r-a", H1, "any")]
    assert {a.max_loaded for a in attempts} == {0}  # the host loads what it is asked


def test_unlimited_hosts_have_every_model_warm() -> None:
    limits = {H1: HostLimits(parallel=1, max_loaded=0)}
    attempts = plan(
        [waiting("a"), waiting("b")],
        {H1: view(a=1)},
        limits,
        now_ms=NOW,
        keep_warm_ms=0,
        max_wait_ms=1,
    )
    assert order(attempts) == [("r-b", H1, "warm")]


def test_a_model_whose_runs_are_still_going_keeps_its_place() -> None:
    old = {"a": NOW - 10_000, "b": NOW - 10_000}
    idle = view(loaded=old)  # both idle: their runs are between two steps, or done
    going = {H1: frozenset({"a", "b"})}
    assert make(waiting("c"), views={H1: idle}, in_use=going) == []
    attempts = make(waiting("c"), views={H1: idle}, in_use={H1: frozenset({"a"})})
    assert order(attempts) == [("r-c", H1, "swap")]
    assert attempts[0].protect == ("a",)  # the slot script is told too


def test_a_runs_calls_go_before_assessment_calls_and_those_never_drain() -> None:
    background = Waiting("r-judge", "a", (H1,), 5, NOW - 120_000, background=True)
    attempts = make(background, waiting("a"), views={H1: view(loaded={"a": NOW})})
    # Same model, same class (warm): the run's line first, however many evaluations wait.
    assert order(attempts) == [("r-a", H1, "warm"), ("r-judge", H1, "warm")]
    busy = {"x": NOW - 10_000, "y": NOW - 10_000}
    going = {H1: frozenset({"x", "y"})}  # both loaded models' runs are still going
    late = Waiting("r-judge", "j", (H1,), 5, NOW - 120_000, background=True)
    assert make(late, views={H1: view(loaded=busy)}, in_use=going) == []  # waits, no drain
    run_late = Waiting("r-j", "j", (H1,), 1, NOW - 120_000)
    drained = make(run_late, views={H1: view(loaded=busy)}, in_use=going)
    assert order(drained) == [("r-j", H1, "drain")]  # a run that waited that long may
