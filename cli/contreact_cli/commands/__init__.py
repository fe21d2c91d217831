"""The command groups of ``contreact``, one module each; every module's ``register``
adds its subcommands (with their handlers) to the top-level parser.

- ``stack``: up, down, status
- ``runs``: run, watch, runs, show, reply, cancel
- ``forks``: fork
- ``inspect``: rebuild, replay, export, memory-rebuild, deadletters
- ``corpus``: similarity, corpus, search
- ``models``: models
- ``experiment``: experiment run|status|cancel|export
"""
