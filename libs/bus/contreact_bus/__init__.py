"""The Redis side of ContReAct: run log, task streams, dead letters, archive."""
