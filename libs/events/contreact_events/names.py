"""Every Redis stream, consumer group and key name, in one place.

A run's own keys carry the run id as a hash tag (``{run_id}``) so that they live in
one Redis Cluster slot; nothing else needs a multi-key transaction.
"""

from __future__ import annotations

import zlib

INBOX_GROUP = "orchestrator"
INBOX_SHARDS_KEY = "orchestrator:shards"
"""How many inbox shards this deployment has: set once by the first orchestrator."""
DEFAULT_INBOX_SHARDS = 8


def inbox_stream(shard: int) -> str:
    """One shard of the orchestrator's inbox; a run's messages always go to the same one."""
    return f"orchestrator:inbox:{shard}"


def inbox_shard(run_id: str, shards: int) -> int:
    """The shard of a run: a stable hash of its id (CRC-32, the same on every machine)."""
    return zlib.crc32(run_id.encode()) % shards


def shard_lease_key(shard: int) -> str:
    """Who owns an inbox shard: ``"{replica} {fencing token}"``, with a TTL renewed by
    the owner. The hash tag puts it in one slot with its fencing counter."""
    return f"orchestrator:{{shard-{shard}}}:lease"


def shard_fence_key(shard: int) -> str:
    """The shard's fencing-token counter: every new lease takes the next number."""
    return f"orchestrator:{{shard-{shard}}}:fence"


ORCHESTRATOR_REPLICAS = "orchestrator:replicas"
"""Sorted set of live orchestrator replicas, scored by when their registration lapses."""


LLM_TASKS_STREAM = "tasks:llm"
"""Model checks (they load no model); chat tasks go to their route's stream."""
LLM_GROUP = "llm-workers"
"""The LLM workers' group, on ``tasks:llm`` and on every route stream."""

LLM_ROUTES = "llm:routes"
"""Hash of route id -> route (backend, model, hosts) as JSON: the streams workers scan."""
LLM_WAKE_CHANNEL = "llm:wake"
"""Pub/sub: a route id when a chat task is queued, a host when a slot is released."""


def llm_route_stream(route_id: str) -> str:
    """Chat tasks of one (backend, model, host pool): a slow model waits in its own line."""
    return f"tasks:llm:{route_id}"


def llm_route_runs_key(route_id: str) -> str:
    """Set of the runs that sent a chat task on a route: while one of them is active,
    the route's model will be called again, so no host swaps it out."""
    return f"llm:route:{route_id}:runs"


def llm_route_pins_key(route_id: str) -> str:
    """Hash of run id -> the host of the route's pool its calls stick to (``pool``)."""
    return f"llm:route:{route_id}:pins"


def llm_host_down_key(host: str) -> str:
    """String set while a host is held down (its last error), expiring after
    ``host_down_s``: a call that could not reach it set it (``pool``)."""
    return f"llm:{{{host}}}:down"


def llm_host_leases_key(host: str) -> str:
    """Sorted set of the calls in flight on a host: ``MODEL\\nLEASE`` scored by expiry (ms)."""
    return f"llm:{{{host}}}:leases"


def llm_host_loaded_key(host: str) -> str:
    """Hash of the models a host holds loaded (as the workers' calls made it) -> last use (ms)."""
    return f"llm:{{{host}}}:loaded"


def llm_host_draining_key(host: str) -> str:
    """Hash of a loaded model that takes no new calls, to make room -> until when (ms)."""
    return f"llm:{{{host}}}:draining"


MEMORY_TASKS_STREAM = "tasks:memory"
MEMORY_GROUP = "memory-workers"

EMBED_TASKS_STREAM = "tasks:embed"
EMBED_GROUP = "embedders"

WORKER_GROUPS: tuple[tuple[str, str], ...] = (
    (LLM_TASKS_STREAM, LLM_GROUP),
    (MEMORY_TASKS_STREAM, MEMORY_GROUP),
    (EMBED_TASKS_STREAM, EMBED_GROUP),
)
"""Every worker task stream with its consumer group."""

DEAD_LETTER_STREAM = "deadletter"

RUNS_INDEX = "runs:index"
"""Sorted set of every run id, scored by submission time (a listing projection)."""

ACTIVE_RUNS = "runs:active"
"""Set of run ids that have not reached a terminal event (read at orchestrator start)."""

SERVICES_HEARTBEAT = "services:heartbeat"
"""Hash of service instance name -> last heartbeat (unix seconds), for `contreact status`."""

REPLICATION_MARK = "replication:mark"
"""A counter written only to give a ``WAIT`` something of its connection's to wait for:
the replication stream is one ordered stream, so once the replicas hold this write they
hold every write before it (``contreact_bus.failover.durability``)."""


def experiment_runs_key(experiment: str) -> str:
    """Set of the run ids of an experiment (a listing projection, for corpus scopes)."""
    return f"experiment:{{{experiment}}}:runs"


def experiment_replicas_key(experiment: str) -> str:
    """Hash of an experiment's replicas (``LABEL-A``) -> its current attempt (JSON):
    what resubmitting the experiment resumes from."""
    return f"experiment:{{{experiment}}}:replicas"


def corpus_cleared_key(scope: str) -> str:
    """When a paragraph corpus was last cleared (chunks accepted before are ignored)."""
    return f"corpus:{{{scope}}}:cleared"


def run_log_key(run_id: str) -> str:
    """The run log: append-only, never trimmed, the orchestrator its only writer."""
    return f"run:{{{run_id}}}"


def run_meta_key(run_id: str) -> str:
    """A small hash projected from the run log (status, cycle, events) for listings."""
    return f"run:{{{run_id}}}:meta"


def run_writer_key(run_id: str) -> str:
    """Hash of the run's writer: ``fence`` (the highest fencing token that wrote the
    log: a lower one is refused), ``task`` and ``digest`` (the task the log last asked
    for: workers apply only a task that matches)."""
    return f"run:{{{run_id}}}:writer"


def run_digest_key(run_id: str) -> str:
    """Where the orchestrator answers a state-digest request for `contreact rebuild`."""
    return f"run:{{{run_id}}}:digest"


def run_fork_refusal_key(run_id: str, request_id: str) -> str:
    """Why the orchestrator refused the fork request ``request_id`` (an inbox message id)
    that asked for run ``run_id``: one line, expiring (``contreact fork`` waits on it)."""
    return f"run:{{{run_id}}}:fork:{request_id}"


FORK_REFUSAL_TTL_S = 3600
# --- assessments (issue 15): beside the run, never in its log -----------------------


def run_assessments_key(run_id: str) -> str:
    """A run's assessment stream: ``RunAssessed`` / ``AssessmentFailed`` records, each
    written once (``run_assessment_index_key``). Same hash tag as the run: one slot."""
    return f"run:{{{run_id}}}:assessments"


def run_assessment_index_key(run_id: str) -> str:
    """Hash of ``INSTRUMENT\\nEVALUATOR\\nREPEAT`` -> ``job:JOB_ID`` once the rating is
    claimed (enqueued), then ``entry:STREAM_ID`` once its record is in the stream: one
    claim and one record per (instrument, evaluator, repeat) of the run."""
    return f"run:{{{run_id}}}:assessment-index"


def run_queries_key(run_id: str) -> str:
    """A run's query stream (``contreact query``): ``RunQueried`` records, beside the run
    and never in its log. Same hash tag as the run: one slot."""
    return f"run:{{{run_id}}}:queries"


def check_job_id(run_id: str, nonce: str) -> str:
    """The id a model check the CLI asks for answers to (``history.model`` at
    ``contreact run``): a gate and a reply list as an assessment job's."""
    return f"check-{run_id.replace('.', '_')}-{nonce}"


def query_job_id(run_id: str, nonce: str) -> str:
    """The id a query's model calls answer to (``LLMTask.reply_to``): its reply list and
    gate are an assessment job's (``assessment_reply_key``, ``assessment_gate_key``)."""
    return f"query-{run_id.replace('.', '_')}-{nonce}"


ASSESS_QUEUE = "contreact-assess"
"""The rq queue of assessment jobs (one job per run, evaluator, instrument, repeat).
rq's own keys (``rq:queue:...``, ``rq:job:...``) live on the rq Redis
(``CONTREACT_RQ_REDIS_URL``), whose commands span keys."""


def assessment_reply_key(job_id: str) -> str:
    """List where the LLM worker puts the answer to an assessment job's evaluator call
    (``LLMTask.reply_to`` names the job): the job waits on it (BLPOP)."""
    return f"assess:{{{job_id}}}:reply"


def assessment_gate_key(job_id: str) -> str:
    """The evaluator call an assessment job waits on now: its task id and digest. The
    LLM worker applies an assessment task only if it matches (a stale copy from a
    killed attempt is dropped), as run tasks are checked against ``run_writer_key``."""
    return f"assess:{{{job_id}}}:gate"
