"""The pure core: ``AgentState``, ``fold`` (its branches in ``fold``, the engine in
``folding``), ``decide`` (deciding, ``advance`` and the cognition steps), prompt
assembly, the task outbox and the task ids. No I/O, no clock, no randomness. What reads
a whole log (replay, what-if, forks, export, summaries) is in ``contreact_events.history``."""
