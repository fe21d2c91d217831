"""How long a test waits for what must happen before it calls it a hang."""

HANG_GUARD_S = 180.0
"""Only a guard: a wait returns as soon as what it waits for happens, so a loaded machine
makes a test slower, never a failure. No test asserts a wall-clock bound (issue 34): a
test checks order and outcome, and a hang is what this catches."""
