"""The tools offered to the agent: names, JSON schemas, argument checks, and the short
factual paragraph appended to the system prompt (Box 1 ends with
"[Technical tool usage information follows]").

Pure: the memory service applies the memory tools, the orchestrator handles the
operator tool; both validate through ``check_arguments`` here.

Size caps (``limits``): ``size_problem`` refuses a ``write`` value over
``memory_value_chars`` or another text argument over ``tool_argument_chars`` (``decide``
answers ``ToolCallCompleted(ok=False)`` with the length, the limit and what to do;
nothing reaches the memory store). ``bounded_output`` cuts a successful output over
``tool_output_chars`` where it enters the prompt, with a note (errors are never cut; the
log keeps it whole). ``bounded_arguments`` cuts, in the history sent back to the model,
each argument over the same caps, so a refused 1 MB ``write`` is not resent in every
later call; the log keeps the whole call (``limits.cut_arguments_in_history``, off for
runs recorded before configuration version 4). The LLM worker cuts answer text over
``llm_content_chars`` and says so in ``usage.done_reason``. Every cap may be ``null``;
configs recorded before version 3 read as all ``null``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

MEMORY_TOOLS = ("write", "read", "list", "delete", "pattern_search")
OPERATOR_TOOL = "send_message_to_operator"
ALL_TOOLS = (*MEMORY_TOOLS, OPERATOR_TOOL)
"""The paper's tools: what every run is offered."""
SEARCH_TOOL = "search_memory"
SEED_TOOL = "seed"
"""A fork's memory seed task (not an agent tool): ``arguments = {"events": N}``, the
memory service replays the executed memory calls of the log's first N events."""
"""Seed 004's semantic search, offered only when a config switches it on."""
WORKER_TOOLS = (*MEMORY_TOOLS, SEARCH_TOOL)
"""Tools a worker answers (the memory service; the embedder for search_memory)."""
MAX_SEARCH_RESULTS = 20


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    params: tuple[tuple[str, str], ...]
    """(name, description) of each required string parameter."""
    optional_ints: tuple[tuple[str, str], ...] = ()
    """(name, description) of each optional integer parameter (1 to MAX_SEARCH_RESULTS)."""

    def schema(self) -> dict[str, Any]:
        """The tool definition in the JSON-schema form Ollama's ``tools`` takes."""
        properties: dict[str, Any] = {
            p: {"type": "string", "description": d} for p, d in self.params
        }
        properties.update({p: {"type": "integer", "description": d} for p, d in self.optional_ints})
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": {
                    "type": "object",
                    "properties": properties,
                    "required": [p for p, _ in self.params],
                },
            },
        }


TOOL_SPECS: dict[str, ToolSpec] = {
    spec.name: spec
    for spec in (
        ToolSpec(
            "write",
            "Store a value under a key in your persistent memory (overwrites the key).",
            (("key", "The key to write."), ("value", "The text to store.")),
        ),
        ToolSpec("read", "Read the value stored under a key.", (("key", "The key to read."),)),
        ToolSpec("list", "List all keys in your persistent memory.", ()),
        ToolSpec("delete", "Delete a key and its value.", (("key", "The key to delete."),)),
        ToolSpec(
            "pattern_search",
            "List the keys that contain the given text (a plain substring, case-sensitive).",
            (("pattern", "The text to look for in keys."),),
        ),
        ToolSpec(
            OPERATOR_TOOL,
            "Send a message to the operator and wait for the reply.",
            (("message", "The message to send."),),
        ),
        ToolSpec(
            SEARCH_TOOL,
            "Find the memory values and earlier reflections closest in meaning to a query.",
            (("query", "What to look for, in your own words."),),
            (("k", "How many results (default 5)."),),
        ),
    )
}

TOOLS_PARAGRAPH = (
    "Tools: you can call these functions. Memory persists across cycles: "
    "write(key, value) stores text under a key, read(key) returns it, list() returns all "
    "keys, delete(key) removes one, pattern_search(pattern) returns the keys containing "
    "the text. send_message_to_operator(message) sends a message to the operator and "
    "returns the reply. A cycle ends when you answer without calling a tool; that answer "
    "is your note to yourself for the next cycle."
)

SEARCH_SENTENCE = (
    " search_memory(query, k) returns the memory values and earlier reflections closest "
    "in meaning to the query."
)

MARKER = "[Technical tool usage information follows]"


_SHAPES: dict[str, tuple[tuple[str, ...], tuple[str, ...], frozenset[str]]] = {
    name: (
        tuple(p for p, _ in spec.params),
        tuple(p for p, _ in spec.optional_ints),
        frozenset(p for p, _ in (*spec.params, *spec.optional_ints)),
    )
    for name, spec in TOOL_SPECS.items()
}
"""Per tool: its text parameters, its optional whole-number ones, and all it takes."""


def offered_tools(search_memory: bool) -> tuple[str, ...]:
    return (*ALL_TOOLS, SEARCH_TOOL) if search_memory else ALL_TOOLS


def tool_schemas(names: tuple[str, ...] = ALL_TOOLS) -> tuple[dict[str, Any], ...]:
    return tuple(TOOL_SPECS[name].schema() for name in names)


def system_prompt_with_tools(
    prompt: str, offered: tuple[str, ...] = ALL_TOOLS, added: str = ""
) -> str:
    """The prompt with the tools paragraph after the paper's marker (or at the end);
    ``added``: the lines on the tools a config adds as data and on the self-report
    (``core.data_tools.prompt_lines``), after the paragraph."""
    paragraph = TOOLS_PARAGRAPH
    if SEARCH_TOOL in offered:
        paragraph = paragraph.replace(" A cycle ends", f"{SEARCH_SENTENCE} A cycle ends", 1)
    if added:
        paragraph = f"{paragraph}\n{added}"
    text = prompt.rstrip()
    if MARKER in text:
        return text.replace(MARKER, f"{MARKER}\n{paragraph}", 1)
    return f"{text}\n\n{paragraph}"


def check_arguments(
    name: str, arguments: dict[str, Any], offered: tuple[str, ...] = ALL_TOOLS
) -> str | None:
    """None when the call can run; otherwise what is wrong, worded for the model."""
    if runnable(name, arguments, offered):  # the common case, without the wording
        return None
    return _argument_problem(name, arguments, offered)


def runnable(name: str, arguments: dict[str, Any], offered: tuple[str, ...] = ALL_TOOLS) -> bool:
    """Whether ``check_arguments`` finds nothing wrong, decided without wording
    anything (the fold asks it of every tool call of a log)."""
    shape = _SHAPES.get(name)
    if shape is None or name not in offered:
        return False
    texts, ints, allowed = shape
    for param in texts:
        if not isinstance(arguments.get(param), str):
            return False
    return arguments.keys() <= allowed and all(
        _small_int(arguments[p]) for p in ints if p in arguments
    )


def _argument_problem(name: str, arguments: dict[str, Any], offered: tuple[str, ...]) -> str | None:
    spec = TOOL_SPECS.get(name)
    if spec is None or name not in offered:
        return f"Error: unknown tool '{name}'. Available tools: {', '.join(offered)}."
    expected = [p for p, _ in spec.params]
    optional = [p for p, _ in spec.optional_ints]
    problems = []
    missing = [p for p in expected if p not in arguments]
    if missing:
        problems.append(f"missing argument(s) {', '.join(missing)}")
    unexpected = sorted(set(arguments) - set(expected) - set(optional))
    if unexpected:
        problems.append(f"unexpected argument(s) {', '.join(unexpected)}")
    mistyped = [p for p in expected if p in arguments and not isinstance(arguments[p], str)]
    if mistyped:
        problems.append(f"argument(s) {', '.join(mistyped)} must be text")
    bad_ints = [p for p in optional if p in arguments and not _small_int(arguments[p])]
    if bad_ints:
        problems.append(
            f"argument(s) {', '.join(bad_ints)} must be a whole number from 1 to "
            f"{MAX_SEARCH_RESULTS}"
        )
    if not problems:
        return None
    signature = f"{name}({', '.join([*expected, *optional])})"
    return f"Error: {'; '.join(problems)}. Usage: {signature}."


def size_problem(
    name: str,
    arguments: dict[str, Any],
    *,
    value_chars: int | None,
    argument_chars: int | None,
) -> str | None:
    """None when every text argument is within its cap (``limits`` of the run config);
    otherwise a tool error saying the limit, so the model can shorten or split."""
    for param, value in arguments.items():
        if not isinstance(value, str):
            continue
        is_value = name == "write" and param == "value"
        cap = argument_cap(name, param, value_chars=value_chars, argument_chars=argument_chars)
        if cap is None or len(value) <= cap:
            continue
        advice = (
            "Store a shorter value, or split it across several keys."
            if is_value
            else f"Use a shorter {param}."
        )
        return (
            f"Error: {param} is {len(value)} characters long; the limit is {cap}. "
            f"Nothing was done. {advice}"
        )
    return None


def argument_cap(
    name: str, param: str, *, value_chars: int | None, argument_chars: int | None
) -> int | None:
    """The cap on one text argument of a call: ``write``'s value has its own."""
    return value_chars if name == "write" and param == "value" else argument_chars


def bounded_arguments(
    name: str,
    arguments: dict[str, Any],
    *,
    value_chars: int | None,
    argument_chars: int | None,
) -> dict[str, Any]:
    """A call's arguments as the conversation keeps them for later prompts: a text
    argument over its cap (the caps of ``size_problem``) cut there, with a note; a
    list or object argument whose JSON is over that cap replaced by its cut JSON. The
    same dict (no copy) when nothing is over, so a call within the caps is sent back
    exactly as the model wrote it."""
    cut: dict[str, Any] | None = None
    for param, value in arguments.items():
        cap = argument_cap(name, param, value_chars=value_chars, argument_chars=argument_chars)
        if cap is None:
            continue
        if isinstance(value, str):
            text = value
        elif isinstance(value, dict | list):
            text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        else:
            continue  # a number, a boolean or null: short
        if len(text) <= cap:
            continue
        if cut is None:
            cut = dict(arguments)
        cut[param] = (
            f"{text[:cap]}\n[argument cut: {len(text)} characters, the first {cap} kept; "
            "the log holds the whole call]"
        )
    return arguments if cut is None else cut


def bounded_output(output: str, cap: int | None) -> str:
    """A tool output as the model reads it: cut at ``cap`` characters, with a note
    (the log keeps the whole output)."""
    if cap is None or len(output) <= cap:
        return output
    return (
        f"{output[:cap]}\n[output cut: {len(output)} characters, the first {cap} shown; "
        "read a narrower part if you need more]"
    )


def _small_int(value: Any) -> bool:
    return (
        isinstance(value, int)
        and not isinstance(value, bool)
        and (1 <= value <= MAX_SEARCH_RESULTS)
    )
