"""Following a run: one line per thing a researcher wants to see, as it happens.

Agent and config text (the model's name, tool names and arguments, messages,
reflections, errors) is passed through ``safe``, one line each.
"""

from __future__ import annotations

from contreact_cli.output import Printer
from contreact_cli.text import safe
from contreact_events.catalog import Event


class ProgressPrinter:
    def __init__(self, out: Printer, *, cycle_count: int = 0) -> None:
        self._out = out
        self._cycles = cycle_count
        self._model = ""
        self._pooled = False
        """The run's model has a pool of hosts (``ollama_client_config.hosts``,
        ``openai_client_config.base_urls``)."""
        self._host = ""

    def show(self, event: Event) -> None:
        line = self._line(event)
        if line is not None:
            self._out(line)

    def _answered(self, host: str | None, unparsed: bool) -> str | None:
        """A pool's host, when it first answers and when the run moves; a tool call
        that could not be parsed."""
        lines = []
        if host and host != self._host:
            shown = safe(host, 80, one_line=True)
            if self._host:
                lines.append(f"  now served by {shown} (was {safe(self._host, 80, one_line=True)})")
            elif self._pooled:
                lines.append(f"  served by {shown}")
            self._host = host
        if unparsed:
            lines.append("  the model's tool call could not be parsed; kept as text")
        return "\n".join(lines) or None

    def _line(self, event: Event) -> str | None:
        match event.type:
            case "RunRequested":
                self._cycles = event.config.cycle_count
                self._model = event.config.model_name
                self._pooled = len(event.config.llm_hosts()) > 1
                return (
                    f"run {event.run_id}: model {safe(event.config.model_name, one_line=True)}, "
                    f"{self._cycles} cycle(s), backend {event.config.backend}"
                )
            case "ModelChecked":
                if event.ok and event.model and self._model and event.model != self._model:
                    return (
                        f"backend: {event.backend} ({safe(event.detail, one_line=True)})\n"
                        f"WARNING: model {safe(event.model, 80, one_line=True)} runs INSTEAD OF "
                        f"the configured {safe(self._model, 80, one_line=True)}; "
                        "set `backend: ollama` to fail instead"
                    )
                if event.ok:
                    return f"backend: {event.backend} ({safe(event.detail, one_line=True)})"
                return None  # RunFailed follows with the same reason: said once
            case "CycleStarted":
                advisory = " (diversity advisory in force)" if event.advisory else ""
                return f"cycle {event.cycle}/{self._cycles}{advisory}"
            case "ToolCallRequested":
                args = ", ".join(
                    f"{safe(k, 40, one_line=True)}={safe(repr(v), 40, one_line=True)}"
                    for k, v in event.arguments.items()
                )
                return f"  step {event.step}: {safe(event.tool_name, 40, one_line=True)}({args})"
            case "ToolCallCompleted" if not event.ok:
                return f"    tool error: {safe(event.output, 160, one_line=True)}"
            case "OperatorMessageSent":
                return f"  agent -> operator: {safe(event.message, 300, one_line=True)}"
            case "OperatorReplied":
                who = "operator" if event.by == "operator" else "operator (automatic)"
                return f"  {who} -> agent: {safe(event.text, 300, one_line=True)}"
            case "LLMResponded":
                return self._answered(event.host, event.tool_call_error is not None)
            case "SimilarityAssessed":
                if event.max_similarity is None:
                    note = safe(event.note, 200, one_line=True) if event.note else ""
                    return f"  similarity: {note or 'nothing earlier to compare with'}"
                advice = {
                    "high": "high: advisory for the next cycle",
                    "moderate": "moderate: advisory for the next cycle",
                    "none": "no advisory",
                }[event.level]
                return (
                    f"  similarity: {event.max_similarity:.3f} to cycle "
                    f"{event.most_similar_cycle} ({advice})"
                )
            case "EmbeddingFailed":
                error = safe(event.error, 160, one_line=True)
                return f"  embedding failed, no similarity check: {error}"
            case "StepLimitReached":
                then = "a last call without tools" if event.final_call else "cycle ends"
                return (
                    f"  step limit reached ({event.steps} steps): "
                    f"{event.dropped_tool_calls} tool call(s) not run, {then}"
                )
            case "ReflectionRecorded":
                return f"  reflection: {safe(event.text, 160, one_line=True) or '(empty)'}"
            case "CycleEnded":
                m = event.metrics
                return (
                    f"  cycle {event.cycle} done: {m.tool_calls} tool call(s), "
                    f"{m.memory_ops_total} memory op(s), {m.messages_to_operator} "
                    f"message(s) to operator, {m.response_chars} response chars, "
                    f"{m.prompt_tokens}+{m.completion_tokens} tokens, "
                    f"LLM {m.llm_seconds:.1f}s"
                )
            case "RunCompleted":
                return f"run {event.run_id} completed: {event.cycles} cycle(s)"
            case "RunFailed":
                return f"run {event.run_id} failed: {safe(event.reason, one_line=True)}"
            case "RunCancelled":
                return f"run {event.run_id} cancelled: {safe(event.reason, one_line=True)}"
            case "RunStopped":
                return (
                    f"run {event.run_id} stopped: {event.reason}: "
                    f"{safe(event.detail, one_line=True)} (in cycle {event.cycle})"
                )
        return None
