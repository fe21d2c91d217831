"""The pure core: ``AgentState``, ``fold``, ``decide``, prompt assembly, the task outbox,
replay and export. No I/O, no clock, no randomness."""
