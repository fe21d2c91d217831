"""What a search over runs looks at, read from a run's log. Pure.

The texts an agent left that a researcher searches for (``contreact search`` and the
dashboard's search page answer the same question from these): each cycle's
reflection, each memory value written (with its key), each message to the operator
and its reply, and each tool's output. Every text carries the cycle it appears in and
the position of the event that holds it, so a result links to that cycle and event.

``SearchTexts`` reads events one at a time (the dashboard's projector feeds it as a
run's log grows; the CLI feeds a whole log): ``feed`` returns the texts an event
adds. A reflection is returned a second time, with its vector, when the log records
its embedding (``ReflectionEmbedded``), so a store keyed by ``(seq, kind, label)``
replaces the first row with the second.

``semantic_ranking`` is the semantic search: the texts closest in meaning to the
query, by the exact cosine of ``VectorIndex`` between the query's embedding and each
text's (the caller embeds, with the embedder's model: the query, and the texts whose
vector the log does not hold). The cosine alone, by choice, where the agent's
``search_memory`` ranks with ``cognition.retrieval``'s hybrid: a researcher's search
spans runs of any age, so recency would rank by when a run happened and change the
answer as time passes, and shared words are the keyword search's own mode
(docs/cognition.md, "Search across runs stays the cosine").

``keyword_match`` is the keyword search: the query is a literal text (never a
pattern), matched without regard to case (Unicode case folding), and the match is
returned with a little of the text around it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from contreact_events.catalog import Event
from contreact_events.catalog.diversity import ReflectionEmbedded
from contreact_events.catalog.tool import (
    OperatorMessageSent,
    OperatorReplied,
    ToolCallCompleted,
    ToolCallRequested,
)

if TYPE_CHECKING:
    from contreact_events.diversity.vector_index import VectorLike

TextKind = Literal["reflection", "memory", "operator", "reply", "tool"]
KINDS: tuple[TextKind, ...] = ("reflection", "memory", "operator", "reply", "tool")
"""Reflections, memory values, messages to the operator, the operator's replies, tool
outputs."""
KIND_LABELS: dict[str, str] = {
    "reflection": "reflection",
    "memory": "memory value",
    "operator": "message to the operator",
    "reply": "operator's reply",
    "tool": "tool output",
}
MEMORY_WRITE = "write"
TEXT_EVENT_TYPES = frozenset(
    {
        "ToolCallRequested",
        "ToolCallCompleted",
        "OperatorMessageSent",
        "OperatorReplied",
        "ReflectionEmbedded",
        "ReflectionRecorded",
    }
)
"""The event types that add texts (each type is one class). ``feed`` also takes the
cycle of any event that has one: a caller may skip the events that have neither."""


@dataclass(frozen=True, slots=True)
class SearchText:
    """One searchable text of a run."""

    run_id: str
    seq: int
    """Position (1-based) of the event that holds the text in the run's log."""
    cycle: int
    kind: TextKind
    label: str
    """The memory key, the tool's name; empty for the other kinds."""
    text: str
    vector: tuple[float, ...] | None = None
    """The text's embedding when the log records it (reflections)."""


@dataclass
class SearchTexts:
    """Reads one run's events in log order and says which texts each one adds."""

    run_id: str
    seq: int = 0
    cycle: int = 0
    _requests: dict[str, tuple[int, str, str, str]] = field(default_factory=dict)
    """task id -> (cycle, tool name, memory key, value written) of a tool call."""
    _operator: dict[str, int] = field(default_factory=dict)
    _reflections: dict[int, SearchText] = field(default_factory=dict)

    def feed(self, event: Event, seq: int | None = None) -> list[SearchText]:
        """The texts ``event`` adds; ``seq`` is its position in the log (default:
        one after the previous event fed)."""
        self.seq = self.seq + 1 if seq is None else seq
        cycle = event.__dict__.get("cycle")  # a field or nothing (getattr misses are slow)
        if isinstance(cycle, int) and cycle > 0:
            self.cycle = cycle
        if event.type not in TEXT_EVENT_TYPES:  # most events: nothing to search
            return []
        match event:
            case ToolCallRequested():
                key = value = ""
                if event.tool_name == MEMORY_WRITE:
                    key = str(event.arguments.get("key", ""))
                    value = str(event.arguments.get("value", ""))
                self._requests[event.task_id] = (event.cycle, event.tool_name, key, value)
            case ToolCallCompleted():
                return self._completed(event)
            case OperatorMessageSent():
                self._operator[event.task_id] = event.cycle
                return [self._text(event.cycle, "operator", "", event.message)]
            case OperatorReplied():
                cycle = self._operator.get(event.task_id, self.cycle)
                return [self._text(cycle, "reply", event.by, event.text)]
            case ReflectionEmbedded():
                found = self._reflections.get(event.cycle)
                if found is not None:
                    return [
                        SearchText(
                            found.run_id,
                            found.seq,
                            found.cycle,
                            found.kind,
                            found.label,
                            found.text,
                            tuple(event.vector),
                        )
                    ]
            case _ if event.type == "ReflectionRecorded":
                text = self._text(event.cycle, "reflection", "", event.text)
                self._reflections[event.cycle] = text
                return [text]
        return []

    def feed_all(self, events: Iterable[Event]) -> list[SearchText]:
        """Every text of ``events``, the last version of each (with its vector)."""
        found: dict[tuple[int, str, str], SearchText] = {}
        for event in events:
            for text in self.feed(event):
                found[(text.seq, text.kind, text.label)] = text
        return list(found.values())

    def _completed(self, event: ToolCallCompleted) -> list[SearchText]:
        request = self._requests.pop(event.task_id, None)
        cycle, tool, key, value = request or (self.cycle, event.tool_name, "", "")
        out = [self._text(cycle, "tool", tool, event.output)]
        if tool == MEMORY_WRITE and request is not None and event.ok:
            out.insert(0, self._text(cycle, "memory", key, value))
        return out

    def _text(self, cycle: int, kind: TextKind, label: str, text: str) -> SearchText:
        return SearchText(self.run_id, self.seq, cycle, kind, label, text)


def fold_case(text: str) -> str:
    """The form keyword search compares: Unicode case folding (``ß`` matches ``SS``)."""
    return text.casefold()


@dataclass(frozen=True, slots=True)
class Match:
    """Where a keyword was found: the text around it, split so that a page can mark
    the match (each part is shown as text)."""

    before: str
    match: str
    after: str


def keyword_match(text: str, query: str, *, context: int = 80) -> Match | None:
    """The first occurrence of ``query`` in ``text`` (literal, case folded), with up to
    ``context`` characters each side; None when it does not occur. An empty query
    matches nothing."""
    folded_query = fold_case(query)
    if not folded_query:
        return None
    folded = fold_case(text)
    at = folded.find(folded_query)
    if at < 0:
        return None
    if len(folded) == len(text):  # the usual case: positions carry over
        start, end = at, at + len(folded_query)
    else:  # folding changed lengths (ß -> ss): find the span in the original
        start, end = _original_span(text, folded_query, at)
    head = max(0, start - context)
    return Match(
        before=("…" if head else "") + text[head:start],
        match=text[start:end],
        after=text[end : end + context] + ("…" if end + context < len(text) else ""),
    )


def _original_span(text: str, folded_query: str, at: int) -> tuple[int, int]:
    """The span of ``text`` whose folding holds the match found at ``at``."""
    position = 0
    start = end = len(text)
    for index, char in enumerate(text):
        if position <= at < position + len(fold_case(char)) and start == len(text):
            start = index
        position += len(fold_case(char))
        if position >= at + len(folded_query):
            end = index + 1
            break
    return start, end


def semantic_ranking(
    query: VectorLike, texts: Sequence[SearchText], vectors: Sequence[VectorLike], k: int
) -> list[tuple[SearchText, float]]:
    """The ``k`` texts closest in meaning to the query (best first), with their cosine
    similarity; ``vectors[i]`` is the embedding of ``texts[i]``."""
    from contreact_events.diversity.vector_index import VectorIndex  # numpy: only here

    if not texts:
        return []
    index = VectorIndex()
    index.add_many([str(i) for i in range(len(texts))], vectors, scope="texts")
    return [(texts[int(hit.id)], hit.score) for hit in index.search(query, k=k)]
