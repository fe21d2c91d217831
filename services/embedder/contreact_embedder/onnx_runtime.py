"""The ``onnx`` runtime: the shipped all-MiniLM-L6-v2 weights exported to ONNX (fp32,
no quantisation) and run by ONNX Runtime, with sentence-transformers' tokenizer.

The export is made offline from the local model directory (``torch.onnx.export`` of
the loaded model, its mean pooling and normalisation included), once per weights:
it is cached under ``cache_dir/<key>/model.onnx``, the key being a hash of the
model's files and of the exporter's versions (kept beside the exports with the
files' stamps, so that an unchanged model is not read again at every start),
written to a temporary name and renamed, so that processes starting together
neither see half a file nor export twice into one. ``contreact-embedder --prepare``
makes it ahead (the image does, at build time); otherwise the first start does (a
few seconds).

Texts are run one at a time, or a few short ones of nearly equal token length
together (``group_by_length``: at most ``ROWS_PER_RUN`` token rows a run, each group
padded only to its own longest). On this model, batching pays only for short texts:
a 192-token text costs less alone than in a batch of 32 of its length, and padding a
paragraph check's ten paragraphs of 32-192 tokens to their longest costs a third
more than the tokens they hold.

Several texts are run side by side, one group per core, on a second session of one
thread each (``OnnxEncoder.run``): one session's threads splitting every matrix
product between them wait for each other a hundred times a text, and on 2 cores a
paragraph check spent a fifth of its time there. A lone text (and a call whose
longest text would leave the other core idle) runs on the session with one thread
per core.

sentence-transformers' own ``backend="onnx"`` is not used: it needs ``optimum-onnx``,
whose releases require a transformers older than this project's. Reusing the kept hash
costs 0.4 ms a start instead of reading the 88 MB (65 ms warm, more cold); a file
written or replaced since has a new ctime or inode, which no tool sets back, and the
start's check against PyTorch's vectors stays the second guard.

That check compares the export's vectors of a few texts with PyTorch's, kept beside
it (``reference.json``, made with it or at the first start that finds none): with the
tokens of ``tokens.Tokenizer``, a start that finds both imports no PyTorch (0.57 CPU-s
against 4.04, peak memory 316 MB against 558: ``bench.services.embedder_throughput``),
nor do the CLI's and the dashboard's searches (``embedding_service.query_model``).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import logging
import os
import re
import tempfile
import time
import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from contreact_embedder.exceptions import ModelUnavailable

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

log = logging.getLogger(__name__)

EXPORT_FORMAT = 1
"""Raised whenever the exported graph changes: a new key, a new export."""
OPSET = 17
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
OUTPUT = "sentence_embedding"
REFERENCE = "reference.json"
"""Beside each export: PyTorch's vectors of the start's check texts (``kept_reference``)."""
PADDING_TOLERANCE = 0.15
"""A text joins a group while its length is within this share of the group's longest."""
ROWS_PER_RUN = 256
"""Most token rows (texts x padded length) in one run of the model: past it a batch
costs more per text than its texts alone (measured, one thread: 32 texts of 192
tokens 64.5 ms a text, one alone 50.8 ms; of 16 tokens 3.6 ms against 5.8 ms)."""
PAIR_COST = 2304
"""Cost of a run in token pairs, attention's unit: each token costs as much in the
layers' matrix products as this many pairs in attention (MiniLM-L6's multiply-adds,
per layer: 4 x 384^2 + 2 x 384 x 1536 a token against 2 x 384 a pair)."""
INTRA_OP_EFFICIENCY = 0.8
"""What one session's second thread adds, as a share of a core (measured on 2 cores:
a paragraph check 349 ms on one thread, 213 ms on two; one text of 174 tokens 43.5
against 27.7 ms). Side by side pays when its busiest core's share is below the whole
divided by cores x this."""
INSTALL_HINT = (
    "Install it with `pip install onnxruntime onnx` (the versions in constraints.txt), "
    "or set CONTREACT_EMBED_RUNTIME=torch."
)


def require_onnxruntime() -> Any:
    """The ``onnxruntime`` module, or ModelUnavailable naming the fix."""
    try:
        import onnxruntime  # type: ignore[import-untyped]
    except ImportError:
        raise ModelUnavailable(
            f"the embedder's runtime is onnx, but onnxruntime is not installed. {INSTALL_HINT}"
        ) from None
    return onnxruntime


def export_key(model_path: Path, cache_dir: Path | None = None) -> str:
    """A hash of the model's files (weights, config, pooling) and the exporter's
    versions: the name of the export made from them.

    With ``cache_dir``, the hash is kept there (``stamps/``) with each file's size,
    mtime, ctime and inode, and reused while none of them changed, instead of reading
    the 88 MB again at every start. A file written or replaced since has a new ctime
    or inode (no tool sets a ctime back), so it is hashed again; the start's check
    against PyTorch's vectors stays the second guard."""
    versions = f"format {EXPORT_FORMAT} opset {OPSET} torch {_torch_version()}"
    files = sorted(
        p
        for p in model_path.rglob("*")
        if p.is_file() and p.suffix not in {".onnx", ".xml", ".md"} and ".cache" not in p.parts
    )
    stamp = _stamp_path(model_path, cache_dir) if cache_dir is not None else None
    listing = [_file_stamp(model_path, path) for path in files]
    if stamp is not None:
        kept = _read_stamp(stamp)
        if kept is not None and kept.get("versions") == versions and kept.get("files") == listing:
            return str(kept["key"])
    digest = hashlib.sha256()
    digest.update(versions.encode())
    for path in files:
        digest.update(str(path.relative_to(model_path)).encode())
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    key = digest.hexdigest()[:24]
    if stamp is not None:
        _write_stamp(stamp, {"versions": versions, "files": listing, "key": key})
    return key


def _torch_version() -> str:
    """PyTorch's version as ``torch.__version__`` gives it, read without importing it
    (a start that finds its export needs no PyTorch at all)."""
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return "none"


def export_path(model_path: Path, cache_dir: Path) -> Path:
    """Where the export of the model in ``model_path`` is (or will be) kept."""
    return cache_dir / export_key(model_path, cache_dir) / "model.onnx"


def kept_reference(export_dir: Path, texts: Sequence[str]) -> npt.NDArray[np.float32] | None:
    """PyTorch's vectors of ``texts`` kept beside the export, or None if none are kept
    for exactly these texts (or the file is not well formed)."""
    try:
        kept = json.loads((export_dir / REFERENCE).read_text())
        vectors = np.asarray(kept["vectors"], dtype=np.float32)
    except (OSError, ValueError, TypeError, KeyError):
        return None
    if kept.get("texts") != list(texts) or vectors.shape[0] != len(texts):
        return None
    return vectors


def keep_reference(export_dir: Path, texts: Sequence[str], vectors: npt.NDArray[Any]) -> None:
    """Keep PyTorch's ``vectors`` of ``texts`` beside the export (whole, by rename); a
    read-only cache keeps none, and every start computes them again."""
    content = {"texts": list(texts), "vectors": [[float(x) for x in row] for row in vectors]}
    try:
        with tempfile.NamedTemporaryFile(
            "w", dir=export_dir, prefix=".reference-", suffix=".json", delete=False
        ) as handle:
            json.dump(content, handle)
        os.replace(handle.name, export_dir / REFERENCE)
    except OSError as exc:
        log.warning("cannot keep PyTorch's check vectors in %s: %s", export_dir, exc)


def _stamp_path(model_path: Path, cache_dir: Path) -> Path:
    name = hashlib.sha256(str(model_path.resolve()).encode()).hexdigest()[:24]
    return cache_dir / "stamps" / f"{name}.json"


def _file_stamp(model_path: Path, path: Path) -> list[str | int]:
    info = path.stat()
    name = str(path.relative_to(model_path))
    return [name, info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino]


def _read_stamp(stamp: Path) -> dict[str, Any] | None:
    """The kept hash and file stamps, or None if missing or not well formed."""
    try:
        kept = json.loads(stamp.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(kept, dict) or not re.fullmatch(r"[0-9a-f]{24}", str(kept.get("key"))):
        return None
    return kept


def _write_stamp(stamp: Path, content: dict[str, Any]) -> None:
    """Keep ``content`` at ``stamp`` (whole, by rename); a read-only cache keeps none."""
    try:
        stamp.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(
            "w", dir=stamp.parent, prefix=".stamp-", suffix=".json", delete=False
        ) as handle:
            json.dump(content, handle)
        os.replace(handle.name, stamp)
    except OSError as exc:
        log.warning("cannot keep the model files' hash in %s: %s", stamp.parent, exc)


def exported_model(model: SentenceTransformer, model_path: Path, cache_dir: Path) -> Path:
    """The ONNX file of ``model`` (loaded from ``model_path``), exported now if the
    cache has none for these weights."""
    target = export_path(model_path, cache_dir)
    if target.is_file():
        return target
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ModelUnavailable(
            f"cannot create the embedder's ONNX cache {target.parent}: {exc}. Set "
            "CONTREACT_EMBED_CACHE_DIR to a writable directory, or run "
            "`contreact-embedder --prepare` where it is writable."
        ) from None
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".export-") as scratch:
        partial = Path(scratch) / "model.onnx"
        _export(model, partial)
        os.replace(partial, target)
    manifest = {"model_path": str(model_path), "format": EXPORT_FORMAT, "opset": OPSET}
    (target.parent / "export.json").write_text(json.dumps(manifest, indent=2) + "\n")
    log.info("exported the model to %s in %.1f s", target, time.perf_counter() - started)
    return target


def _export(model: SentenceTransformer, path: Path) -> None:
    """``torch.onnx.export`` of the transformer with sentence-transformers' mean
    pooling and normalisation, so the graph outputs what ``encode`` does."""
    require_onnxruntime()
    try:
        import onnx  # noqa: F401  # torch's exporter needs it
    except ImportError:
        raise ModelUnavailable(
            f"the embedder's runtime is onnx, but onnx (needed to export the model) is "
            f"not installed. {INSTALL_HINT}"
        ) from None
    import torch

    encoder = _pooled_module()(model[0].auto_model).eval()
    sample = model.tokenizer(
        ["a short one", "and a somewhat longer sentence, so that one is padded"],
        padding=True,
        return_tensors="pt",
    )
    args = tuple(sample[name] for name in INPUTS)
    axes = {name: {0: "batch", 1: "tokens"} for name in INPUTS}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            encoder,
            args,
            str(path),
            input_names=list(INPUTS),
            output_names=[OUTPUT],
            dynamic_axes={**axes, OUTPUT: {0: "batch"}},
            opset_version=OPSET,
            dynamo=False,
        )


def _pooled_module() -> Any:
    """The export's module class (made on first use: torch is imported late, after
    the Hugging Face libraries are put offline)."""
    import torch

    class Pooled(torch.nn.Module):
        """The transformer, mean pooling over the attention mask, L2 normalisation:
        sentence-transformers' ``Transformer`` + ``Pooling(mean)`` + ``Normalize``."""

        def __init__(self, transformer: torch.nn.Module) -> None:
            super().__init__()
            self.transformer = transformer

        def forward(
            self,
            input_ids: torch.Tensor,
            attention_mask: torch.Tensor,
            token_type_ids: torch.Tensor,
        ) -> torch.Tensor:
            tokens = self.transformer(
                input_ids=input_ids,
                attention_mask=attention_mask,
                token_type_ids=token_type_ids,
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(tokens.dtype)
            summed = (tokens * mask).sum(dim=1)
            mean = summed / mask.sum(dim=1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, p=2.0, dim=1)

    return Pooled


class OnnxEncoder:
    """ONNX Runtime sessions of the exported model: ``session`` with ``threads`` intra-op
    threads (0: one per core), for a lone text; with more than one core, ``solo`` with
    one thread, run from ``workers`` threads at once. Not thread-safe by itself: the
    EmbeddingService calls it under its lock."""

    def __init__(self, path: Path, *, threads: int = 0, workers: int | None = None) -> None:
        self.workers = workers if workers is not None else usable_cores()
        self.session = _session(path, threads)
        self.solo = _session(path, 1) if self.workers > 1 else None
        self._pool = (
            ThreadPoolExecutor(self.workers, thread_name_prefix="onnx")
            if self.workers > 1
            else None
        )

    def run(self, ids: Sequence[Sequence[int]], batch_size: int) -> npt.NDArray[np.float32]:
        """Unit vectors of token-id sequences (with [CLS]/[SEP]), in their order; at
        most ``batch_size`` in one run of the model."""
        if not ids:
            return np.empty((0, 0), dtype=np.float32)
        groups = group_by_length([len(one) for one in ids], batch_size)
        costs = [run_cost(len(group), len(ids[group[0]])) for group in groups]
        shares = deal(groups, costs, self.workers)
        if shares is None or self._pool is None or self.solo is None:
            done = [self._run_groups(self.session, ids, groups)]
        else:
            solo = self.solo
            done = list(self._pool.map(lambda share: self._run_groups(solo, ids, share), shares))
        result = np.empty((len(ids), done[0][1].shape[1]), dtype=np.float32)
        for order, rows in done:
            result[np.asarray(order, dtype=np.int64)] = rows
        return result

    @staticmethod
    def _run_groups(
        session: Any, ids: Sequence[Sequence[int]], groups: list[list[int]]
    ) -> tuple[list[int], npt.NDArray[np.float32]]:
        """The vectors of ``groups`` run one after the other, and their texts' indices."""
        rows: list[npt.NDArray[np.float32]] = []
        order: list[int] = []
        for group in groups:
            longest = max(len(ids[i]) for i in group)
            input_ids = np.zeros((len(group), longest), dtype=np.int64)
            mask = np.zeros((len(group), longest), dtype=np.int64)
            for row, i in enumerate(group):
                input_ids[row, : len(ids[i])] = ids[i]
                mask[row, : len(ids[i])] = 1
            feeds = {
                "input_ids": input_ids,
                "attention_mask": mask,
                "token_type_ids": np.zeros_like(input_ids),
            }
            rows.append(np.asarray(session.run([OUTPUT], feeds)[0], dtype=np.float32))
            order.extend(group)
        return order, np.concatenate(rows)


def _session(path: Path, threads: int) -> Any:
    """An ONNX Runtime session of ``path`` with ``threads`` intra-op threads (0: ONNX
    Runtime's default, one per core)."""
    ort = require_onnxruntime()
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # Idle threads sleep instead of spinning: on a small machine the spinning takes
    # the core Redis and the event loop need between batches (and, measured, it
    # made a paragraph check no faster on a loaded machine, at nearly twice the CPU).
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    try:
        return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as exc:
        raise ModelUnavailable(
            f"ONNX Runtime cannot load the exported model {path}: {exc}. Delete that "
            "directory to export it again."
        ) from None


def usable_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def deal(
    groups: list[list[int]], costs: Sequence[int], workers: int
) -> list[list[list[int]]] | None:
    """``groups`` dealt to ``workers`` run side by side, costliest first to the least
    loaded; None when there is one group, or the busiest worker would take longer
    than the whole on one session of ``workers`` threads (``INTRA_OP_EFFICIENCY``)."""
    if workers < 2 or len(groups) < 2:
        return None
    shares: list[list[list[int]]] = [[] for _ in range(workers)]
    loads = [0] * workers
    for g in sorted(range(len(groups)), key=lambda g: -costs[g]):
        least = loads.index(min(loads))
        shares[least].append(groups[g])
        loads[least] += costs[g]
    if max(loads) * workers * INTRA_OP_EFFICIENCY > sum(costs):
        return None
    return [share for share in shares if share]


def run_cost(texts: int, tokens: int) -> int:
    """A run's cost in attention's token pairs (``PAIR_COST``): ``texts`` padded to
    ``tokens``."""
    return texts * tokens * (tokens + PAIR_COST)


def group_by_length(
    lengths: Sequence[int], batch_size: int, tolerance: float = PADDING_TOLERANCE
) -> list[list[int]]:
    """Indices of ``lengths`` in groups of at most ``batch_size`` and ``ROWS_PER_RUN``
    token rows, longest first, each padded to its first member's length: a member is
    at least ``(1 - tolerance)`` of it."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    groups: list[list[int]] = []
    for i in order:
        last = groups[-1] if groups else None
        if (
            last is not None
            and len(last) < batch_size
            and (len(last) + 1) * lengths[last[0]] <= ROWS_PER_RUN
            and lengths[i] >= (1 - tolerance) * lengths[last[0]]
        ):
            groups[-1].append(i)
        else:
            groups.append([i])
    return groups
