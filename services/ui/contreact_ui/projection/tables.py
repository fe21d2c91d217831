"""The projection store's tables: their SQL, the version they were built for, and the
order a rebuild copies them in (``store`` writes and reads them).

Beside the tables the read models' package lists: ``cycle_marks`` (per cycle, the
position of its ``CycleStarted``, whether its reflection was embedded, its row of the
similarity band: what a long run's pages would otherwise scan the whole log for), and
``texts``, ``text_folds`` and ``text_index`` (what search looks at, each text with its
cycle, event position and, for a reflection, its logged vector; its case-folded copy;
a trigram FTS5 index without content over the folded copies, so a keyword search reads
the texts of its hits alone). ``memory_changes.written_by`` says who made a change
(``agent``, or ``platform`` for the memory policy): an entry is marked persistent when
the platform made its last change, never because of its key's prefix. A similarity row
is computed from the vectors in the log (``SimilarityAssessed.similarities`` exists in
the catalog but ``decide`` does not fill it).
"""

from __future__ import annotations

import zlib

from contreact_events.catalog.cycle import CycleMetrics
from contreact_events.history.run_summary import RunSummary
from contreact_ui.read_models import PROJECTION_VERSION

METRIC_FIELDS = tuple(CycleMetrics.model_fields)
"""One column per cycle metric (the store rebuilds when this list changes)."""

STORE_VERSION = f"{PROJECTION_VERSION}:{zlib.crc32(','.join(METRIC_FIELDS).encode()):08x}"
"""What the tables were built for: the projections' version and the metric fields."""

SUMMARY_FIELDS = tuple(RunSummary.model_fields)

FORKS_INDEX = (
    "CREATE INDEX IF NOT EXISTS events_forked ON events (run_id, seq) WHERE type = 'RunForked'"
)
"""A run page lists its forks: a few rows, made at open where an older store lacks it."""

SETTINGS_INDEX = (
    "CREATE INDEX IF NOT EXISTS events_settings ON events (run_id, seq) "
    "WHERE type = 'SettingsChanged'"
)
"""A run page lists the settings changed mid-run (``contreact set``): made at open too."""

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
  run_id TEXT PRIMARY KEY,
  status TEXT NOT NULL, phase TEXT NOT NULL, model TEXT NOT NULL,
  resolved_model TEXT NOT NULL, backend TEXT NOT NULL, host TEXT NOT NULL DEFAULT '',
  experiment TEXT NOT NULL,
  cycle INTEGER NOT NULL, cycle_count INTEGER NOT NULL, step INTEGER NOT NULL,
  llm_calls INTEGER NOT NULL, prompt_tokens INTEGER NOT NULL,
  completion_tokens INTEGER NOT NULL, llm_seconds REAL NOT NULL, events INTEGER NOT NULL,
  cost REAL NOT NULL DEFAULT 0, uncosted_calls INTEGER NOT NULL DEFAULT 0,
  memory_keys INTEGER NOT NULL, waiting_task TEXT NOT NULL, failure_reason TEXT NOT NULL,
  created_at TEXT, updated_at TEXT,
  last_entry_id TEXT,
  source TEXT NOT NULL DEFAULT 'redis',
  projection_error TEXT,
  terminal INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS runs_created ON runs (created_at);
CREATE TABLE IF NOT EXISTS cycles (
  run_id TEXT NOT NULL, cycle INTEGER NOT NULL,
  started_at TEXT, ended_at TEXT, ended_by TEXT,
  advisory TEXT, advisory_level TEXT,
  {
    ", ".join(
        f"{name} {'REAL' if name == 'llm_seconds' else 'INTEGER'} NOT NULL"
        for name in METRIC_FIELDS
    )
},
  tools TEXT NOT NULL,
  reflection TEXT, reflection_complete INTEGER NOT NULL,
  level TEXT, max_similarity REAL, most_similar_cycle INTEGER,
  advisory_given TEXT, note TEXT NOT NULL, topic_exhausted INTEGER NOT NULL,
  PRIMARY KEY (run_id, cycle)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS similarities (
  run_id TEXT NOT NULL, cycle INTEGER NOT NULL, other INTEGER NOT NULL, value REAL NOT NULL,
  PRIMARY KEY (run_id, cycle, other)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS memory_changes (
  run_id TEXT NOT NULL, seq INTEGER NOT NULL, cycle INTEGER NOT NULL, key TEXT NOT NULL,
  change TEXT NOT NULL, value TEXT, written_by TEXT NOT NULL,
  PRIMARY KEY (run_id, seq, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS operator (
  run_id TEXT NOT NULL, task_id TEXT NOT NULL, cycle INTEGER NOT NULL,
  message TEXT NOT NULL, sent_at TEXT NOT NULL,
  reply TEXT, replied_by TEXT, replied_at TEXT,
  sent_seq INTEGER NOT NULL, replied_seq INTEGER,
  analysis_requested TEXT, analysis_requested_seq INTEGER,
  analysis TEXT, analysis_seq INTEGER,
  PRIMARY KEY (run_id, task_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS attempts (
  run_id TEXT NOT NULL, cycle INTEGER NOT NULL, attempt INTEGER NOT NULL,
  text TEXT NOT NULL, similarity REAL NOT NULL, is_unique INTEGER NOT NULL,
  feedback TEXT NOT NULL, matches INTEGER NOT NULL, paragraphs INTEGER NOT NULL,
  outcome TEXT NOT NULL,
  PRIMARY KEY (run_id, cycle, attempt)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS events (
  run_id TEXT NOT NULL, seq INTEGER NOT NULL, entry_id TEXT, type TEXT NOT NULL,
  ts TEXT NOT NULL, cycle INTEGER NOT NULL, task_key TEXT, payload BLOB NOT NULL,
  PRIMARY KEY (run_id, seq)
);
{FORKS_INDEX};
{SETTINGS_INDEX};
CREATE TABLE IF NOT EXISTS texts (
  run_id TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL, label TEXT NOT NULL,
  cycle INTEGER NOT NULL, text TEXT NOT NULL, vector BLOB,
  PRIMARY KEY (run_id, seq, kind, label)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS texts_kind ON texts (kind, run_id);
CREATE TABLE IF NOT EXISTS text_folds (
  id INTEGER PRIMARY KEY,
  run_id TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL, label TEXT NOT NULL,
  folded TEXT NOT NULL,
  UNIQUE (run_id, seq, kind, label)
);
CREATE VIRTUAL TABLE IF NOT EXISTS text_index USING fts5(
  folded, content='', tokenize='trigram'
);
CREATE TABLE IF NOT EXISTS cycle_marks (
  run_id TEXT NOT NULL, cycle INTEGER NOT NULL,
  start_seq INTEGER, embedded INTEGER NOT NULL, band TEXT,
  PRIMARY KEY (run_id, cycle)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS history_cuts (
  run_id TEXT NOT NULL, cycle INTEGER NOT NULL, kind TEXT NOT NULL, seq INTEGER NOT NULL,
  first_left_out INTEGER NOT NULL, last_left_out INTEGER NOT NULL, messages INTEGER NOT NULL,
  calls INTEGER NOT NULL, compaction_seq INTEGER, compaction_model TEXT,
  PRIMARY KEY (run_id, cycle)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS snapshots (
  run_id TEXT NOT NULL, seq INTEGER NOT NULL, cycle INTEGER NOT NULL, state BLOB NOT NULL,
  PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
"""

TABLES = (
    "runs",
    "cycles",
    "similarities",
    "memory_changes",
    "operator",
    "attempts",
    "events",
    "snapshots",
    "cycle_marks",
    "history_cuts",
    "texts",
    "text_folds",
    "text_index",
)
