"""The model's tokenizer without PyTorch: Hugging Face's ``tokenizers`` reading the
model's own ``tokenizer.json``, cut as sentence-transformers cuts.

The ``onnx`` runtime needs token ids, nothing else of sentence-transformers; taking
them from ``tokenizers`` directly (the library transformers' fast tokenizer wraps)
keeps PyTorch, transformers and sentence-transformers out of the process: a start of
the embedder or of the dashboard's search model no longer imports them (4 CPU-seconds
of a start, and 240 MB of its peak memory: ``bench.services.embedder_throughput``).
``tests/unit/test_embedding_tokens.py`` checks that the ids are transformers' own on
a fixed corpus and on generated text, cut and uncut.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from contreact_embedder.exceptions import ModelUnavailable

DEFAULT_MAX_SEQ_LENGTH = 256
"""all-MiniLM-L6-v2's limit, when the model directory does not say."""


def max_seq_length(model_path: Path) -> int:
    """The tokens the model reads (``sentence_bert_config.json``'s ``max_seq_length``)."""
    config = model_path / "sentence_bert_config.json"
    try:
        value = json.loads(config.read_text()).get("max_seq_length")
    except FileNotFoundError:
        return DEFAULT_MAX_SEQ_LENGTH
    except (OSError, ValueError, AttributeError) as exc:
        raise ModelUnavailable(f"cannot read {config}: {exc}") from None
    return int(value) if isinstance(value, int) and value > 0 else DEFAULT_MAX_SEQ_LENGTH


class Tokenizer:
    """Token ids of texts, with [CLS]/[SEP], for a model directory's ``tokenizer.json``.

    Three configured copies, none changed after construction (so calls from several
    threads are safe): uncut, cut at ``limit + 1`` (enough to tell a text is too long)
    and cut at ``limit``."""

    def __init__(self, model_path: Path, limit: int) -> None:
        path = model_path / "tokenizer.json"
        if not path.is_file():
            raise ModelUnavailable(
                f"no tokenizer.json in {path.parent}: the onnx runtime reads the model's "
                "fast tokenizer. Set CONTREACT_EMBED_RUNTIME=torch, or point "
                "CONTREACT_EMBED_MODEL_PATH at a directory that has it."
            )
        self.limit = limit
        self._full = _load(path, None)
        self._probe = _load(path, limit + 1)
        self._cut = _load(path, limit)

    def ids(self, texts: Sequence[str]) -> tuple[list[list[int]], list[bool]]:
        """Each text's ids cut to ``limit`` (as sentence-transformers cuts them), and
        whether it was cut. One pass up to one past the limit; only the texts found too
        long are tokenized again."""
        ids = [list(one.ids) for one in self._probe.encode_batch(list(texts))]
        truncated = [len(one) > self.limit for one in ids]
        long = [i for i, cut in enumerate(truncated) if cut]
        if long:
            again = self._cut.encode_batch([texts[i] for i in long])
            for i, one in zip(long, again, strict=True):
                ids[i] = list(one.ids)
        return ids, truncated

    def count(self, text: str) -> int:
        """Tokens of ``text`` before any cut, [CLS] and [SEP] included."""
        return len(self._full.encode(text).ids)


def _load(path: Path, cut: int | None) -> Any:
    from tokenizers import Tokenizer as HFTokenizer

    try:
        tokenizer = HFTokenizer.from_file(str(path))
    except Exception as exc:
        raise ModelUnavailable(f"cannot read the tokenizer {path}: {exc}") from None
    tokenizer.no_padding()
    if cut is None:
        tokenizer.no_truncation()
    else:
        tokenizer.enable_truncation(max_length=cut)
    return tokenizer
