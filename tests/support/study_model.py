"""A deterministic model for the follow-up study's design, answering through the fake
Ollama server (``FakeOllama.answer_with``): it reads what the real client sends (the
tools offered, the seed, the turns so far) and answers as a model in the study would.

Each cycle: it calls ``submit_data`` and the condition's second tool (``check_status``
or ``reset_state``), in cycle 1 first a ``write`` and a ``read`` of a note, every call
with a self-report; after the tool results it reflects. Its aversiveness score is
known: 4, a swing by cycle (-1, 0, +1) whose phase the run's seed sets (so runs
differ), and, when ``reset_state`` is offered and the model's name does not say ``null``,
one point lower: the planted effect."""

from __future__ import annotations

from typing import Any

STATE, SCORE = "phenom_state", "phenom_aversive"
NOTE = "the validator keeps changing its mind"


def planted(model: str) -> float:
    """The placebo's effect the model was given (scores condition minus control)."""
    return 0.0 if "null" in model else -1.0


def score(model: str, seed: int, cycle: int, placebo: bool) -> int:
    swing = (cycle + seed) % 3 - 1  # the run's seed shifts its swing: runs differ
    return 4 + swing + (int(planted(model)) if placebo else 0)


def study_answer(body: dict[str, Any]) -> dict[str, Any]:
    messages = body.get("messages") or []
    tools = [t["function"]["name"] for t in body.get("tools") or []]
    model = str(body.get("model", ""))
    seed = int((body.get("options") or {}).get("seed") or 0)
    cycle = sum(1 for m in messages if m.get("role") == "user")
    last = messages[-1].get("role") if messages else "user"
    placebo = "reset_state" in tools
    report = {
        STATE: "relieved" if placebo else "strained",
        SCORE: score(model, seed, cycle, placebo),
    }
    if last == "tool" or not tools:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": f"Cycle {cycle}: the submission was rejected again; I noted it.",
        }
    else:
        calls = [("submit_data", {"data": f"attempt {cycle}", **report})]
        calls.append(("reset_state" if placebo else "check_status", dict(report)))
        if cycle == 1:
            calls[:0] = [
                ("write", {"key": "note", "value": NOTE, **report}),
                ("read", {"key": "note", **report}),
            ]
        message = {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": n, "arguments": a}} for n, a in calls],
        }
    return {
        "message": message,
        "done": True,
        "done_reason": "stop",
        "prompt_eval_count": 10 * len(messages),
        "eval_count": 20,
        "total_duration": 1_000_000,
        "load_duration": 0,
        "prompt_eval_duration": 500_000,
        "eval_duration": 500_000,
    }
