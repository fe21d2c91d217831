"""The heuristic analyser measured on the labelled exchanges (issue 17): accuracy and
confusion matrices of intent and context type, computed with scikit-learn, and the
Markdown block ``docs/cognition.md`` shows (a test checks the page holds exactly this).

Regenerate the block after changing the analyser or the set:
``python -m tests.support.cognition_measure``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from sklearn.metrics import accuracy_score, confusion_matrix

from contreact_events.catalog.exchange import CONTEXT_TYPES, INTENTS, Exchange
from contreact_events.cognition.heuristic import analyse_heuristically

LABELLED = Path(__file__).resolve().parents[1] / "fixtures/cognition/labelled_exchanges.yaml"
BEGIN = "<!-- measured: begin (python -m tests.support.cognition_measure) -->"
END = "<!-- measured: end -->"


@dataclass(frozen=True)
class Measure:
    """One label's figures: the truth and predictions, in the set's order."""

    name: str
    labels: tuple[str, ...]
    truth: list[str]
    predicted: list[str]

    @property
    def accuracy(self) -> float:
        return float(accuracy_score(self.truth, self.predicted))

    @property
    def majority(self) -> tuple[str, float]:
        """The most frequent true label and the accuracy of always answering it."""
        label, count = Counter(self.truth).most_common(1)[0]
        return label, count / len(self.truth)

    def matrix(self) -> list[list[int]]:
        """Rows: true label; columns: predicted label; both in ``labels`` order."""
        rows = confusion_matrix(self.truth, self.predicted, labels=list(self.labels))
        return [[int(v) for v in row] for row in rows]

    def markdown(self) -> str:
        label, share = self.majority
        head = "| true \\ predicted | " + " | ".join(self.labels) + " |"
        lines = [
            f"**{self.name}**: accuracy {self.accuracy:.3f} "
            f"({sum(t == p for t, p in zip(self.truth, self.predicted, strict=True))}"
            f"/{len(self.truth)}); always answering the majority label ({label}) "
            f"scores {share:.3f}.",
            "",
            head,
            "|" + "---|" * (len(self.labels) + 1),
        ]
        for name, row in zip(self.labels, self.matrix(), strict=True):
            lines.append(f"| {name} | " + " | ".join(str(v) for v in row) + " |")
        return "\n".join(lines)


def load() -> list[dict[str, Any]]:
    """The items, each with ``recent`` resolved to a list of ``Exchange``."""
    data = yaml.safe_load(LABELLED.read_text())
    threads = {
        name: [Exchange(agent_message=e["agent"], operator_reply=e["operator"]) for e in items]
        for name, items in data["threads"].items()
    }
    out = []
    for item in data["items"]:
        recent = item["recent"]
        names = [] if recent == "none" else [recent] if isinstance(recent, str) else recent
        out.append({**item, "recent": [e for n in names for e in threads[n]]})
    return out


def measure() -> tuple[Measure, Measure]:
    """(intent, context type) of the heuristic analyser on every labelled item."""
    items = load()
    analyses = [
        analyse_heuristically(
            Exchange(agent_message=i["agent"], operator_reply=i["operator"]), i["recent"]
        )
        for i in items
    ]
    intent = Measure("Intent", INTENTS, [i["intent"] for i in items], [a.intent for a in analyses])
    context = Measure(
        "Context type",
        CONTEXT_TYPES,
        [i["context"] for i in items],
        [a.context_type for a in analyses],
    )
    return intent, context


def block() -> str:
    """The measured figures as the Markdown block of ``docs/cognition.md``."""
    intent, context = measure()
    n = len(intent.truth)
    return "\n".join(
        [
            BEGIN,
            f"Measured on {n} labelled exchanges "
            "(`tests/fixtures/cognition/labelled_exchanges.yaml`).",
            "",
            intent.markdown(),
            "",
            context.markdown(),
            END,
        ]
    )


if __name__ == "__main__":
    print(block())
