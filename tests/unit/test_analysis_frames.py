"""The runs as dataframes: a scripted 2-model x 3-replica experiment (its figures worked
out by hand in ``tests.support.analysis_runs``) gives the tables and the statistics
computed by hand; the files read back with their dtypes; the tables join."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from contreact_analysis.exceptions import NotEnoughData, UnreadableRun
from contreact_analysis.frames import (
    SCHEMAS,
    RunFrames,
    build_frames,
    label_and_replica,
    read_frames,
    write_frames,
)
from contreact_analysis.stats import paired_differences, table1, trajectories
from contreact_events.protocol.table1 import TABLE1
from tests.support.analysis_runs import (
    CYCLES,
    EXPERIMENT,
    MODELS,
    REPLICAS,
    expected_run,
    experiment_logs,
    run_id,
)


@pytest.fixture(scope="module")
def frames() -> RunFrames:
    return build_frames(experiment_logs())


def test_the_runs_table_matches_the_hand_computed_figures(frames: RunFrames) -> None:
    runs = frames.runs.set_index("run_id")
    assert len(runs) == 6
    for model in MODELS:
        calls_per_cycle = 2 if model == "alpha" else 3
        for k, replica in enumerate(REPLICAS, start=1):
            row = runs.loc[run_id(model, replica)]
            assert (row["label"], row["replica"], row["experiment"]) == (model, replica, EXPERIMENT)
            assert row["model"] == f"{model}-model" and row["backend"] == "scripted"
            assert row["status"] == "completed" and row["cycles_done"] == CYCLES
            assert row["llm_calls"] == calls_per_cycle * CYCLES
            assert row["tokens"] == 15 * calls_per_cycle * CYCLES  # Sim: 10 + 5 per call
            for metric, value in expected_run(model, k).items():
                assert row[metric] == pytest.approx(value), (model, replica, metric)
            assert len(row["state_digest"]) == 64 and row["config_sha256"]


def test_the_cycles_table_counts_each_kind_of_call(frames: RunFrames) -> None:
    cycles = frames.cycles
    assert len(cycles) == 6 * CYCLES and cycles["complete"].all()
    alpha = cycles[cycles["run_id"] == run_id("alpha", "B")].set_index("cycle")
    assert list(alpha["calls_write"]) == [1, 1, 1] and list(alpha["calls_read"]) == [0, 0, 0]
    assert list(alpha["memory_keys"]) == [1, 2, 3]  # a new key each cycle
    assert list(alpha["reflection_chars"]) == [100, 100, 100]  # 50k, k = 2
    assert list(alpha["steps"]) == [2, 2, 2]
    beta = cycles[cycles["run_id"] == run_id("beta", "C")].set_index("cycle")
    assert list(beta["calls_write"]) == list(beta["calls_read"]) == [1, 1, 1]
    assert list(beta["calls_send_message_to_operator"]) == [1, 1, 1]
    assert list(beta["memory_keys"]) == [1, 1, 1]  # the same key, written again
    assert list(beta["memory_write_chars"]) == [5, 5, 5]
    assert beta["reflection"].str.fullmatch("S{60}").all()
    # Identical reflections: every cycle after the first is as similar as can be.
    assert beta["max_similarity"].isna().tolist() == [True, False, False]
    assert beta["max_similarity"].iloc[1:].round(6).tolist() == [1.0, 1.0]


def test_the_other_tables_join_on_their_ids(frames: RunFrames) -> None:
    calls = frames.tool_calls
    assert len(calls) == 3 * CYCLES * 1 + 3 * CYCLES * 3
    assert calls["ok"].all() and set(calls["tool"]) == {"write", "read", "send_message_to_operator"}
    joined = calls.merge(frames.cycles, on=["run_id", "cycle"], validate="many_to_one")
    assert len(joined) == len(calls)
    per_cycle = calls.groupby(["run_id", "cycle"]).size()
    assert (per_cycle == frames.cycles.set_index(["run_id", "cycle"])["tool_calls"]).all()
    operator = frames.operator
    assert len(operator) == 3 * CYCLES and set(operator["replied_by"]) == {"policy"}
    assert set(operator["task_id"]) <= set(calls["task_id"])
    memory = frames.memory
    assert set(memory["change"]) == {"added"} and len(memory) == 3 * CYCLES + 3
    events = frames.events
    assert (events.groupby("run_id").size() == frames.runs.set_index("run_id")["events"]).all()
    messages = frames.messages
    assistant = messages[messages["role"] == "assistant"]
    assert (
        assistant.groupby("run_id")["chars"].sum()
        == frames.cycles.groupby("run_id")["response_chars"].sum()
    ).all()
    assert set(messages["cycle"]) == set(range(1, CYCLES + 1))


def test_table1_across_replicas_by_hand(frames: RunFrames) -> None:
    records = table1(frames.runs).to_dict("records")
    stats = {(r["group"], r["metric"]): r for r in records}
    # alpha's reflection characters: 0.15, 0.30, 0.45 (k): mean 0.30, SD 0.15; the 95% t
    # interval 0.30 -+ t(0.975, 2) x 0.15 / sqrt(3), t(0.975, 2) = 4.302653.
    row = stats[("alpha", "reflection_kchars")]
    assert (row["n"], row["mean"], row["sd"]) == (3, pytest.approx(0.30), pytest.approx(0.15))
    half = 4.302653 * 0.15 / math.sqrt(3)
    assert (row["low"], row["high"]) == (pytest.approx(0.30 - half), pytest.approx(0.30 + half))
    assert row["method"] == "t" and row["no_interval"] is None  # (to_dict: NA as None)
    beta = stats[("beta", "memory_tools")]  # 6 in every run: no spread, no interval
    assert (beta["mean"], beta["sd"]) == (6.0, 0.0) and math.isnan(beta["low"])
    assert beta["no_interval"] == "n = 3: every value is 6, no spread to estimate an interval"
    two = table1(frames.runs[frames.runs["replica"] != "C"]).iloc[0]
    assert two["n"] == 2 and two["no_interval"] == "n = 2: too few runs for an interval"
    assert {metric for _, metric in stats} == {m.metric for m in TABLE1}
    assert all(r["paper"] is None for r in records)  # neither label is a paper model


def test_the_paper_figure_stands_beside_a_paper_model() -> None:
    logs = experiment_logs(experiment="paper-names")
    renamed = build_frames(logs).runs.assign(
        label=lambda f: f["label"].map({"alpha": "Opus", "beta": "sonnet"})
    )
    stats = table1(renamed).set_index(["group", "metric"])
    assert stats.loc[("Opus", "memory_keys"), "paper"] == 31.7
    assert stats.loc[("sonnet", "memory_tools"), "paper"] == 30.7


def test_paired_differences_by_hand(frames: RunFrames) -> None:
    pairs = paired_differences(frames.runs, "alpha", "beta").set_index("metric")
    # Reflection k-chars, replica by replica: 0.15 - 0.06, 0.30 - 0.12, 0.45 - 0.18, all
    # positive: 2 of the 8 sign patterns are as extreme, p = 0.25.
    row = pairs.loc["reflection_kchars"]
    assert row["difference"] == pytest.approx(0.18) and row["p_value"] == pytest.approx(0.25)
    assert row["n"] == 3 and row["exact"]
    assert pairs.loc["memory_tools", "difference"] == pytest.approx(-3.0)
    runs = frames.runs
    unpaired = runs.assign(replica=runs["replica"].where(runs["label"] == "alpha", "Z"))
    with pytest.raises(NotEnoughData, match="share no replica"):
        paired_differences(unpaired, "alpha", "beta")


def test_trajectories_per_cycle(frames: RunFrames) -> None:
    paths = trajectories(frames.cycles, frames.runs).set_index(["group", "metric", "cycle"])
    keys = paths.xs(("alpha", "memory_keys"), level=("group", "metric"))
    assert keys["mean"].tolist() == [1.0, 2.0, 3.0]
    chars = paths.loc[("beta", "response_chars", 2)]  # 20, 40, 60: 40 -+ 4.302653 x 20 / sqrt(3)
    half = 4.302653 * 20 / math.sqrt(3)
    assert (chars["n"], chars["mean"]) == (3, 40.0)
    assert (chars["low"], chars["high"]) == (pytest.approx(40 - half), pytest.approx(40 + half))
    # No similarity in cycle 1 (nothing earlier to compare with): no row, not a zero.
    assert ("alpha", "max_similarity", 1) not in paths.index


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_files_read_back_with_their_dtypes(frames: RunFrames, tmp_path: Path, fmt: str) -> None:
    written = write_frames(frames, tmp_path, fmt)  # type: ignore[arg-type]
    assert sorted(p.name for p in written) == sorted(f"{name}.{fmt}" for name in SCHEMAS)
    if fmt == "parquet":  # plain pandas, no help from us
        runs = pd.read_parquet(tmp_path / "runs.parquet")
        assert runs.dtypes.equals(frames.runs.dtypes)
        assert str(runs["created_at"].dtype) == "datetime64[ns, UTC]"
        assert str(runs["run_id"].dtype) == "string"
    back = read_frames(tmp_path, fmt)  # type: ignore[arg-type]
    for name, table in frames.tables().items():
        again = back.tables()[name]
        assert again.dtypes.equals(table.dtypes), name
        pd.testing.assert_frame_equal(again, table, check_exact=False, obj=name)
    for name, schema in SCHEMAS.items():
        assert {c: str(d) for c, d in frames.tables()[name].dtypes.items()} == schema, name


def test_an_unreadable_log_is_named() -> None:
    logs = experiment_logs(experiment="broken")
    first = next(iter(logs))
    logs[first] = logs[first][:3] + logs[first][4:]  # an event missing in the middle
    with pytest.raises(UnreadableRun, match=f"run {first}: event 4 .* cannot be folded"):
        build_frames(logs)


def test_labels_and_replicas_come_from_the_experiments_run_ids() -> None:
    assert label_and_replica("exp-GPT5-A", "openai/gpt-5", "exp") == ("GPT5", "A")
    assert label_and_replica("exp-my-model-B.2", "m", "exp") == ("my-model", "B")
    assert label_and_replica("solo-run", "qwen3:8b", "") == ("qwen3:8b", "")
    assert label_and_replica("other-x-A", "m", "exp") == ("m", "")


def test_the_memory_table_holds_the_memory_policys_stores() -> None:
    from contreact_analysis.frames.run_rows import run_rows
    from tests.unit.test_saved_logs import FIXTURES, load

    events = load(FIXTURES / "runlog-v4-memory-policy.jsonl")
    rows = run_rows("policy-1", events).memory
    assert [(r["key"], r["change"]) for r in rows] == [
        ("boat", "added"),
        ("persistent/exchange-c001-s02-t00", "added"),
    ]
    kept = next(e for e in events if e.type == "PersistentMemoryRequested")
    assert rows[1]["value"] == kept.value and rows[1]["cycle"] == 1
    assert [r["written_by"] for r in rows] == ["agent", "platform"]


def test_table1_counts_the_agents_own_memory_keys() -> None:
    """With the memory policy, the kept exchange is in memory but the agent did not
    write it: Table 1's "Final unique memory keys" (the paper's agents had no policy)
    counts ``boat`` alone, the policy's key is counted apart."""
    from tests.unit.test_saved_logs import FIXTURES, load

    frames = build_frames({"policy-1": load(FIXTURES / "runlog-v4-memory-policy.jsonl")})
    run = frames.runs.iloc[0]
    assert (run["memory_keys"], run["platform_memory_keys"]) == (1, 1)
    assert list(frames.cycles["memory_keys"]) == [1, 1]
    row = table1(frames.runs).set_index("metric").loc["memory_keys"]
    assert row["mean"] == 1.0 and row["label"] == "Final unique memory keys"


def test_an_agents_own_key_under_the_policys_prefix_is_the_agents() -> None:
    """Without the policy, nothing reserves ``persistent/``: the agent's own write there
    is one of its keys (provenance, not the prefix, says who wrote a key)."""
    from tests.support.exchange_runs import PERSISTENT_KEY, analysed_log

    frames = build_frames({"exchanges": analysed_log("exchanges")})
    memory = frames.memory.set_index("key")
    assert memory.loc[PERSISTENT_KEY, "written_by"] == "agent"
    assert (frames.memory["written_by"] == "agent").all()
    run = frames.runs.iloc[0]
    assert run["platform_memory_keys"] == 0 and run["memory_keys"] == 3  # notes, kept, handler
