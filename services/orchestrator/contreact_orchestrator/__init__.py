"""The ContReAct orchestrator: the only writer of run logs."""
