"""What the terminal shows of runs: a run's progress as it goes (and the operator's
prompt), an experiment's live table, a what-if report."""
