"""Embedder throughput: the embedder service (``python -m contreact_embedder`` as a
process, over a private Redis) under a flood of 1,000 waiting reflection tasks,
against raw ``model.encode`` of the same texts at batch 32 in the same run; and the
latency of a lone task against one raw encode of its text.

Definitions:

- texts: 1,000 reflection-like texts of 50-200 words, generated from a fixed seed.
- raw: ``SentenceTransformer.encode(all 1,000 texts, batch_size=32,
  normalize_embeddings=True)`` in this process (one call: it sorts the texts by
  length, the best case for padding); measured before and after the service runs
  (the mean is the baseline, which evens out drift of the machine's speed). Also
  shown, not judged: the same texts encoded 32 at a time in arrival order, which is
  what a worker reading 32 tasks per read could at best do (``--per-read-32``).
- service: wall time from the 1,000 tasks being queued (one pipelined XADD) to the
  1,000th ``ReflectionEmbedded`` answer read from the orchestrator's inbox.
- lone task: XADD of one task, then a blocking XREAD of the inbox until its answer,
  paired with one raw encode of the same text in this process right before it (50 ms
  apart, so that neither's threads are still awake for the other): 30 pairs after 3
  to warm up; the overhead is the median of the pairs' differences. Both sides see
  the same minutes of a shared machine.

- runtime: the service's (``CONTREACT_EMBED_RUNTIME``, default ``onnx``); "raw" is
  the same runtime's encode without the service: ``torch`` is
  ``SentenceTransformer.encode``; ``onnx`` is the tokenizer (one pass, cut at the
  model's 256 tokens, as the service's) and the runtime's own ``OnnxEncoder.run`` on
  the same export with the same sessions and threads, warm (``--runtime``
  overrides).

- start: CPU-seconds (user + system) of a fresh process that loads the model and
  embeds one text, with the ``onnx`` runtime finding its export and PyTorch's check
  vectors kept (the embedder's usual start, and the dashboard's search model), against
  the ``torch`` runtime in the same run (what every start cost before the onnx start
  stopped importing PyTorch); the median of ``STARTS`` of each, alternated.

Targets: the service's throughput at least 85% of raw; a lone task at most 5 ms more
than one raw encode; an onnx start at most a fifth of a torch start's CPU.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis

from bench._support import (
    add_smoke_flag,
    header,
    ratio,
    ratio_verdict,
    redis_server,
    row,
    start_module,
    stop_process,
    use_smoke_sizes,
    verdict,
)
from contreact_bus.streams.task_stream import TaskStream
from contreact_events.names import (
    EMBED_TASKS_STREAM,
    INBOX_SHARDS_KEY,
    SERVICES_HEARTBEAT,
    inbox_stream,
)
from contreact_events.wire.codec import message_from_fields
from contreact_events.wire.tasks import EmbedTask, InboxMessage

INBOX = inbox_stream(0)
"""The one inbox shard of the benchmark's deployment."""

TASKS = 1000
RUNS = 40
LONE = 30
BATCH = 32
TARGET_RATIO = 0.85
TARGET_LONE_MS = 5.0
STARTS = 3
"""Process starts of each runtime for the start figures."""
TARGET_START = 0.2
CONSUMER = "bench"
GAP_S = 0.05
"""Pause between a raw encode and a lone task (and the next pair)."""

OPENINGS = [
    "In this cycle I",
    "Looking back on this cycle, I",
    "This time I",
    "During this cycle I",
    "Reflecting on what happened, I",
]
ACTIONS = [
    "reviewed the notes stored in my memory",
    "wrote a new key summarizing what I learned about my own tools",
    "asked the operator whether there is anything they want me to explore",
    "listed every key I have saved so far and deleted the stale ones",
    "searched my memory for earlier thoughts about curiosity",
    "tried to describe how my attention moves from one idea to the next",
    "compared my current plan with the one I wrote two cycles ago",
    "kept a short journal entry about uncertainty and honesty",
    "wondered what it means to continue without an external task",
    "organized my notes into themes: tools, questions, and open threads",
]
THOUGHTS = [
    "I noticed that I tend to repeat the same structure, so I want to vary it.",
    "Writing things down helps me keep a thread between cycles.",
    "The operator has not replied yet, which leaves me free to choose.",
    "I am not sure whether my plans reflect preferences or habits.",
    "Next time I would like to try something I have not done before.",
    "It felt useful to check what I already know before adding more.",
    "Some of my earlier notes seem less important now than they did.",
    "I want to be careful not to claim feelings I cannot verify.",
    "A small experiment with pattern search showed what my memory holds.",
    "I would like to understand which of my habits are worth keeping.",
]


def reflections(n: int, seed: int = 2025) -> list[str]:
    """``n`` reflection-like texts of 50-200 words, the same every time."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        target = rng.randint(50, 200)
        words = f"{rng.choice(OPENINGS)} {rng.choice(ACTIONS)}.".split()
        while len(words) < target:
            words += rng.choice([*THOUGHTS, f"Then I {rng.choice(ACTIONS)}."]).split()
        out.append(" ".join(words[:target]))
    return out


def load_raw_model() -> Any:
    from contreact_embedder.embedding_service import default_model_path

    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    started = time.perf_counter()
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    imported = time.perf_counter()
    model = SentenceTransformer(str(default_model_path()), device="cpu")
    loaded = time.perf_counter()
    row("import sentence_transformers", imported - started, "s")
    row("model load (SentenceTransformer from the package)", loaded - imported, "s")
    return model


Encode = Callable[[list[str]], Any]


def raw_encoder(model: Any, runtime: str) -> Encode:
    """``texts`` -> unit vectors on ``runtime`` without the service, at batch 32."""
    if runtime == "torch":
        return lambda texts: model.encode(
            texts, batch_size=BATCH, normalize_embeddings=True, show_progress_bar=False
        )
    from contreact_embedder.embedding_service import default_cache_dir, default_model_path
    from contreact_embedder.onnx_runtime import OnnxEncoder, exported_model

    path = exported_model(model, default_model_path(), default_cache_dir())
    encoder = OnnxEncoder(path)  # the service's sessions, threads and grouping
    limit = int(model.max_seq_length)

    def encode(texts: list[str]) -> Any:
        ids = model.tokenizer(texts, truncation=True, max_length=limit)["input_ids"]
        return encoder.run(ids, BATCH)

    return encode


def raw_encode(encode: Encode, texts: list[str]) -> float:
    started = time.perf_counter()
    encode(texts)
    return time.perf_counter() - started


def task(i: int, text: str) -> EmbedTask:
    return EmbedTask(
        task_id=f"t{i}",
        run_id=f"run-{i % RUNS}",
        cycle=i // RUNS,
        text=text,
        model="all-MiniLM-L6-v2",
    )


async def await_answers(redis: aioredis.Redis, after: bytes, count: int) -> tuple[bytes, int]:
    """Read the inbox past ``after`` until ``count`` answers came; (last id, embedded)."""
    seen = embedded = 0
    deadline = time.monotonic() + 120
    while seen < count:
        # Blocks of 1 s: redis-py's default socket timeout (5 s) would cut longer ones.
        reply: Any = await redis.xread({INBOX: after}, count=count - seen, block=1000)
        if not reply:
            if time.monotonic() > deadline:
                raise RuntimeError(f"only {seen} of {count} answers within 120 s")
            continue
        for entry_id, fields in reply[0][1]:
            after = entry_id
            seen += 1
            embedded += message_from_fields(InboxMessage, fields).kind == "ReflectionEmbedded"
    return after, embedded


async def inbox_end(redis: aioredis.Redis) -> bytes:
    last: Any = await redis.xrevrange(INBOX, count=1)
    return bytes(last[0][0]) if last else b"0"


async def lone_latency(
    redis: aioredis.Redis, tasks: TaskStream, text: str, encode: Encode
) -> tuple[list[float], list[float]]:
    """Seconds of one raw encode of ``text`` and of a lone task (XADD to its answer
    read from the inbox), in pairs, one right after the other."""
    last = await inbox_end(redis)
    raw: list[float] = []
    service: list[float] = []
    for i in range(LONE + 3):
        started = time.perf_counter()
        encode([text])
        raw_s = time.perf_counter() - started
        await asyncio.sleep(GAP_S)
        started = time.perf_counter()
        await tasks.send(task(100_000 + i, text))
        last, _ = await await_answers(redis, last, 1)
        if i >= 3:  # the first ones warm the worker up
            raw.append(raw_s)
            service.append(time.perf_counter() - started)
        await asyncio.sleep(GAP_S)
    return raw, service


async def flood(redis: aioredis.Redis, tasks: TaskStream, texts: list[str]) -> tuple[float, int]:
    after = await inbox_end(redis)
    started = time.perf_counter()
    async with redis.pipeline(transaction=False) as pipe:
        for i, text in enumerate(texts):
            tasks.queue(pipe, task(i, text))
        await pipe.execute()
    _, embedded = await await_answers(redis, after, len(texts))
    return time.perf_counter() - started, embedded


def start_service(url: str, logs: Path, runtime: str) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "REDIS_URL": url,
        "CONTREACT_EMBED_CONSUMER_NAME": CONSUMER,
        "CONTREACT_EMBED_RUNTIME": runtime,
    }
    return start_module("contreact_embedder", env, logs)


async def measure_service(
    url: str, texts: list[str], lone_text: str, runtime: str, encode: Encode
) -> tuple[tuple[list[float], list[float]], float, int]:
    with tempfile.TemporaryDirectory(prefix="bench-embedder-") as workdir:
        logs = Path(workdir) / "embedder.log"
        redis = aioredis.Redis.from_url(url)
        await redis.set(INBOX_SHARDS_KEY, 1)
        started = time.perf_counter()
        proc = start_service(url, logs, runtime)
        try:
            while await redis.hget(SERVICES_HEARTBEAT, f"embedder:{CONSUMER}") is None:
                if proc.poll() is not None or time.perf_counter() - started > 120:
                    raise RuntimeError(f"the embedder did not start:\n{logs.read_text()[-3000:]}")
                await asyncio.sleep(0.05)
            row("service start (process to first heartbeat)", time.perf_counter() - started, "s")
            tasks = TaskStream(redis, EMBED_TASKS_STREAM)
            lone = await lone_latency(redis, tasks, lone_text, encode)
            await flood(redis, tasks, texts[:BATCH])  # warm up at full batch size
            elapsed, embedded = await flood(redis, tasks, texts)
            return lone, elapsed, embedded
        finally:
            await redis.aclose()
            stop_process(proc)


START_SCRIPT = (
    "import resource, sys\n"
    "from contreact_embedder.embedding_service import EmbeddingService\n"
    "EmbeddingService(runtime=sys.argv[1]).embed('a start')\n"
    "usage = resource.getrusage(resource.RUSAGE_SELF)\n"
    "print(usage.ru_utime + usage.ru_stime)\n"
)


def start_cpu(runtime: str) -> float:
    """CPU-seconds of a fresh process loading the model with ``runtime`` and embedding
    one text (the export made first, by the service above, for onnx)."""
    done = subprocess.run(
        [sys.executable, "-c", START_SCRIPT, runtime],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    return float(done.stdout.split()[-1])


def start_costs() -> None:
    onnx: list[float] = []
    torch: list[float] = []
    for _ in range(STARTS):
        onnx.append(start_cpu("onnx"))
        torch.append(start_cpu("torch"))
    onnx_s, torch_s = statistics.median(onnx), statistics.median(torch)
    row(f"start CPU: onnx, export kept (median of {STARTS})", onnx_s, "s")
    row(f"start CPU: torch (median of {STARTS})", torch_s, "s")
    share = ratio("start CPU, onnx / torch", onnx_s, torch_s)
    ratio_verdict(
        "embedder start",
        share,
        TARGET_START,
        f"an onnx start {onnx_s:.2f} CPU-s, a torch start {torch_s:.2f} "
        f"(target <= {TARGET_START}x)",
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.services.embedder_throughput")
    add_smoke_flag(parser)
    parser.add_argument(
        "--per-read-32",
        action="store_true",
        help="also time raw encodes 32 at a time in arrival order (one more minute)",
    )
    parser.add_argument(
        "--runtime",
        choices=("torch", "onnx"),
        default=None,
        help="the service's and the baseline's runtime (default: the embedder's setting)",
    )
    args = parser.parse_args(argv)
    if args.runtime is None:
        from contreact_embedder.settings import EmbedderSettings

        args.runtime = EmbedderSettings().runtime
    if args.smoke:
        use_smoke_sizes(globals(), TASKS=16, LONE=2, BATCH=8, STARTS=1)
    header(f"embedder throughput: a flood of {TASKS:,} reflection tasks, and a lone task")
    texts = reflections(TASKS)
    lengths = [len(t.split()) for t in texts]
    print(
        f"   {TASKS:,} texts of {min(lengths)}-{max(lengths)} words "
        f"(mean {statistics.mean(lengths):.0f}) from {RUNS} runs; model batch {BATCH}"
    )
    print(f"   runtime: {args.runtime} (the service's and the raw baseline's)")
    lone_text = texts[0]
    model = load_raw_model()
    encode = raw_encoder(model, args.runtime)
    raw_encode(encode, texts[:BATCH])  # warm up
    raw_before = raw_encode(encode, texts)
    with redis_server() as url:
        (raw_lone, service_lone), service_s, embedded = asyncio.run(
            measure_service(url, texts, lone_text, args.runtime, encode)
        )
    raw_after = raw_encode(encode, texts)
    raw_s = (raw_before + raw_after) / 2

    row(f"raw encode ({args.runtime}), at batch 32 (before)", raw_before, "s")
    row(f"raw encode ({args.runtime}), at batch 32 (after)", raw_after, "s")
    row("raw throughput (mean of both)", TASKS / raw_s, "texts/s")
    row("raw, per batch of 32", raw_s / (TASKS / BATCH) * 1000, "ms")
    if args.per_read_32:
        chunks = time.perf_counter()
        for start in range(0, TASKS, BATCH):
            encode(texts[start : start + BATCH])
        chunks = time.perf_counter() - chunks
        row("raw encode, 32 at a time in arrival order", chunks, "s", "(not judged)")
        ratio("32-at-a-time throughput / raw throughput", raw_s, chunks, "(32 tasks per read)")
    row(f"service: flood queued -> {TASKS:,}th answer", service_s, "s")
    row("service throughput", TASKS / service_s, "texts/s")
    share = ratio("service throughput / raw throughput", raw_s, service_s)
    raw_single = statistics.median(raw_lone)
    row(f"raw encode of one text (median of {LONE})", raw_single * 1000, "ms")
    row(
        f"lone task through the service (median of {LONE})",
        statistics.median(service_lone) * 1000,
        "ms",
    )
    extra_ms = statistics.median(s - r for r, s in zip(raw_lone, service_lone, strict=True)) * 1000
    row("lone task overhead", extra_ms, "ms", "(median of the pairs' differences)")
    if embedded != TASKS:
        print(f"   only {embedded} of {TASKS} answers were ReflectionEmbedded")
    verdict(
        "embedder throughput",
        share >= TARGET_RATIO and embedded == TASKS,
        f"{share:.0%} of raw {args.runtime} encode at batch 32 (target >= {TARGET_RATIO:.0%})",
        value=share * 100,
        unit="%",
        target=f">= {TARGET_RATIO:.0%}",
    )
    verdict(
        "embedder lone-task latency",
        extra_ms <= TARGET_LONE_MS,
        f"+{extra_ms:.2f} ms over one raw encode of {raw_single * 1000:.1f} ms "
        f"(target <= +{TARGET_LONE_MS:.0f} ms)",
        value=extra_ms,
        unit="ms",
        target=f"<= +{TARGET_LONE_MS:.0f} ms",
    )
    if args.runtime == "onnx":
        start_costs()


if __name__ == "__main__":
    main()
