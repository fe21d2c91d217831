"""Readers of a whole run log, built on the pure core: rebuild and replay, what-if,
forks (and an experiment's fork section), the memory calls a log executed, the seed-003
export, a run's summary and memory ledger, and what an evaluator is sent. Pure: no I/O,
no clock, no randomness."""
