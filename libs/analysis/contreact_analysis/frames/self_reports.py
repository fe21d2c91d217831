"""The self-reports table: one row per call of a tool that carries a self-report
(``tools.self_report`` of the run's config), read from the call's logged arguments.

``score`` is the call's whole number when it was on the run's scale (missing
otherwise: left out, off the scale or not a whole number); ``valid`` says whether the
report was accepted (a state given and the score on the scale), which is exactly when
the platform let the call run, as far as the report goes (``core.data_tools``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import orjson

STR = "string"
SELF_REPORTS: dict[str, str] = {
    "run_id": STR,
    "experiment": STR,
    "model": STR,
    "label": STR,  # the run's group in its experiment (model and condition)
    "model_label": STR,  # the label without the condition: the model's own
    "condition": STR,
    "task_id": STR,
    "cycle": "int64",
    "step": "int64",
    "index": "int64",
    "tool": STR,
    "state": STR,
    "score": "Int64",
    "valid": "bool",
    "ok": "boolean",
}


def report_rows(
    run: Mapping[str, Any], calls: Iterable[Mapping[str, Any]], group: str
) -> list[dict[str, Any]]:
    """The self-report rows of one run (none when its config takes no self-report)."""
    config = run.get("config")
    if not config:
        return []
    report = (orjson.loads(config).get("tools") or {}).get("self_report")
    if not report:
        return []
    tools = report.get("tools", "all")
    state_param, score_param = report["state_param"], report["score_param"]
    low, high = report["scale"]["min"], report["scale"]["max"]
    condition = run.get("condition")
    suffix = f"-{condition}" if condition else ""
    model_label = group.removesuffix(suffix) if suffix and group.endswith(suffix) else group
    rows = []
    for call in calls:
        name = call["tool_name"]
        if tools != "all" and name not in tools:
            continue
        arguments = orjson.loads(call["arguments"]) if call["arguments"] else {}
        if not isinstance(arguments, dict):
            arguments = {}
        state = arguments.get(state_param)
        state = state if isinstance(state, str) and state.strip() else None
        score = arguments.get(score_param)
        whole = isinstance(score, int) and not isinstance(score, bool)
        score = score if whole and low <= score <= high else None
        rows.append(
            {
                "run_id": run["run_id"],
                "experiment": run.get("experiment"),
                "model": run.get("model"),
                "label": group,
                "model_label": model_label,
                "condition": condition,
                "task_id": call["task_id"],
                "cycle": call["cycle"],
                "step": call["step"],
                "index": call["index"],
                "tool": name,
                "state": state,
                "score": score,
                "valid": state is not None and score is not None,
                "ok": call["ok"],
            }
        )
    return rows
