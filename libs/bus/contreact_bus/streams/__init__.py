"""Task streams through Redis consumer groups: the producer side (``task_stream``, the
orchestrator's ``inbox``), one named consumer (``consumer``), the loop that serves it
(``serving``), and the gate a worker with effects checks a task against (``task_gate``)."""
