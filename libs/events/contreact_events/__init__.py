"""ContReAct events: the catalog, envelope, codec, names, and the pure fold/decide core.

The package imports nothing itself: a process that needs only ``contreact_events.names``
(every CLI command, through the bus's settings) does not pay for the catalog, the core
and numpy (about half of a CLI command's start). Import from the modules:
``contreact_events.catalog``, ``contreact_events.core.fold``, ``contreact_events.config``.
"""
