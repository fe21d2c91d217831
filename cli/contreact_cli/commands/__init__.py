"""The command groups of ``contreact``, one module each; every module's ``register``
adds its subcommands (with their handlers) to the top-level parser.

- ``stack``: up, down, status
- ``runs``: run, watch, runs, show, reply, cancel
- ``forks``: fork
- ``inspect``: rebuild, replay, export, memory-rebuild, deadletters
- ``corpus``: similarity, corpus, search
- ``models``: models
- ``experiment``: experiment run|plan|status|cancel|export (``plan`` in ``experiment_plan``)
- ``interview``: ask, query, queries
- ``control``: set, pause, resume, step
- ``analysis``: analyze, conditions, report
- ``assess``: assess and its actions (``matrix`` in ``assess_matrix``, ``read`` in
  ``assess_read``)
"""
