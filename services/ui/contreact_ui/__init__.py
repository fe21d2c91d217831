"""ContReAct dashboard: read-only pages and a JSON API over projections of the run logs."""
