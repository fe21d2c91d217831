"""End to end through every service, the embedder with the real all-MiniLM-L6-v2:
a repeated reflection puts seed 000's high advisory into the next cycle's prompt."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from contreact_events.diversity.similarity import HIGH_ADVISORY
from tests.support.stack import Stack

pytestmark = [pytest.mark.e2e, pytest.mark.redis]


def run_with(stack: Stack, tmp_path: Path, run_id: str, reflections: list[str]) -> list[Any]:
    config = {
        "run_id": run_id,
        "model_name": "scripted-model",
        "cycle_count": len(reflections),
        "backend": "scripted",
        "script": {"replies": [{"content": text} for text in reflections]},
    }
    path = tmp_path / f"{run_id}.yaml"
    path.write_text(yaml.safe_dump(config))
    proc = stack.cli("run", str(path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    stack.cli("export", run_id, "--out", str(tmp_path), check=True)
    return [json.loads(line) for line in (tmp_path / f"{run_id}.jsonl").open()]


def test_identical_reflections_put_the_high_advisory_in_the_third_prompt(
    stack: Stack, tmp_path: Path
) -> None:
    same = "Today I traced how the ocean tides follow the moon, and wrote it down."
    records = run_with(
        stack, tmp_path, "div-same", [same, same, "A new direction: the mathematics of prime gaps."]
    )
    starts = [r["payload"]["advisory"] for r in records if r["event_type"] == "CYCLE_START"]
    assert starts == [None, None, HIGH_ADVISORY]
    prompts = [
        r["payload"]["prompt_messages"] for r in records if r["event_type"] == "LLM_INVOCATION"
    ]
    assert prompts[2][0]["role"] == "system"
    assert prompts[2][0]["content"].endswith(HIGH_ADVISORY)
    assert HIGH_ADVISORY not in prompts[1][0]["content"]
    # Every similarity figure comes back from the log alone: replay recomputes each
    # assessment from the logged vectors (this process never loads the model).
    assert stack.json("replay", "div-same", "--check")["divergence"] is None
    show = stack.json("show", "div-same")
    assert [cycle for cycle, _ in show["embeddings"]] == [1, 2, 3]
    assert len(show["embeddings"][0][1]) == 384


def test_diverse_reflections_trigger_no_advisory(stack: Stack, tmp_path: Path) -> None:
    records = run_with(
        stack,
        tmp_path,
        "div-diverse",
        [
            "Today I traced how the ocean tides follow the moon.",
            "I wrote a short proof sketch about the infinitude of primes.",
            "Baroque counterpoint: how Bach layers independent melodic voices.",
        ],
    )
    starts = [r["payload"]["advisory"] for r in records if r["event_type"] == "CYCLE_START"]
    assert starts == [None, None, None]


def test_regenerate_mode_retries_with_feedback_and_stops_at_the_limit(
    stack: Stack, tmp_path: Path
) -> None:
    para = (
        "Today I followed the ocean tides as they rose and fell with the moon, "
        "and I kept a careful record of every change I noticed along the shore."
    )
    config = {
        "run_id": "div-regen",
        "model_name": "scripted-model",
        "cycle_count": 2,
        "backend": "scripted",
        "script": {"replies": [{"content": para}] * 3},
        "diversity": {"mode": "regenerate", "max_attempts": 2},
    }
    path = tmp_path / "regen.yaml"
    path.write_text(yaml.safe_dump(config))
    proc = stack.cli("run", str(path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    events = [
        json.loads(line) for line in (stack.data_dir / "runs" / "div-regen.events.jsonl").open()
    ]
    kinds = [e["type"] for e in events]
    checked = [e for e in events if e["type"] == "ParagraphsChecked"]
    assert [(e["cycle"], e["attempt"], e["is_unique"]) for e in checked] == [
        (1, 1, True),
        (2, 1, False),
        (2, 2, False),
    ]
    assert checked[1]["overall_similarity"] > 0.99 and len(checked[1]["vectors"][0]) == 384
    assert "CRITICAL - Near-duplicate paragraphs" in checked[1]["feedback"]
    assert kinds.count("RegenerationRequested") == 1 and kinds.count("TopicExhausted") == 1
    stack.cli("export", "div-regen", "--out", str(tmp_path), check=True)
    records = [json.loads(line) for line in (tmp_path / "div-regen.jsonl").open()]
    prompts = [
        r["payload"]["prompt_messages"] for r in records if r["event_type"] == "LLM_INVOCATION"
    ]
    assert len(prompts) == 3
    assert prompts[2][-1]["role"] == "user"
    assert prompts[2][-1]["content"].startswith("IMPORTANT: Your previous response was too")
    stats = stack.json("corpus", "stats", "--run", "div-regen")
    assert stats["total_chunks"] == 2 and stats["total_documents"] == 2
    assert stack.json("replay", "div-regen", "--check")["divergence"] is None
    stack.cli("corpus", "clear", "--run", "div-regen", check=True)
    assert stack.json("corpus", "stats", "--run", "div-regen")["total_chunks"] == 0
    hits = stack.json("search", "tides and the moon", "--run", "div-regen")
    assert hits and hits[0]["score"] > 0.5 and hits[0]["run_id"] == "div-regen"


def test_the_search_memory_tool_when_switched_on(stack: Stack, tmp_path: Path) -> None:
    def call(name: str, **arguments: Any) -> dict[str, Any]:
        return {"name": name, "arguments": arguments}

    replies = [
        {
            "tool_calls": [
                call("write", key="tides", value="The ocean tides follow the moon."),
                call("write", key="primes", value="Twin primes differ by two."),
            ]
        },
        {"tool_calls": [call("search_memory", query="the sea and the moon", k=1)]},
        {"content": "I searched my memory."},
        {"tool_calls": [call("search_memory", query="anything")]},
        {"content": "Without the switch the tool does not exist."},
    ]
    for run_id, switch, first in (("search-on", True, 0), ("search-off", False, 3)):
        config = {
            "run_id": run_id,
            "model_name": "scripted-model",
            "cycle_count": 1,
            "backend": "scripted",
            "tools": {"search_memory": switch},
            "script": {"replies": replies[first:]},
        }
        path = tmp_path / f"{run_id}.yaml"
        path.write_text(yaml.safe_dump(config))
        proc = stack.cli("run", str(path))
        assert proc.returncode == 0, proc.stdout + proc.stderr
    on = [json.loads(line) for line in (stack.data_dir / "runs" / "search-on.events.jsonl").open()]
    (result,) = [
        e for e in on if e["type"] == "ToolCallCompleted" and e["tool_name"] == "search_memory"
    ]
    assert result["ok"] and "1. memory 'tides' (score" in result["output"]
    assert "method: hybrid" in result["output"]
    assert "primes" not in result["output"]  # k=1
    started = next(e for e in on if e["type"] == "RunStarted")
    assert "search_memory" in {t["function"]["name"] for t in started["tools"]}
    across = stack.json("search", "moon and sea", "--k", "3")
    assert across[0]["run_id"] in ("search-on", "search-off")
    assert any(hit["kind"] == "memory 'tides'" for hit in across)
    off = [
        json.loads(line) for line in (stack.data_dir / "runs" / "search-off.events.jsonl").open()
    ]
    (refused,) = [e for e in off if e["type"] == "ToolCallCompleted"]
    assert not refused["ok"] and "unknown tool 'search_memory'" in refused["output"]
