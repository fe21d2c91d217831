"""The documentation site's generated pages, written from the code, never by hand.

``python -m tools.docs_gen`` writes every page (``make docs`` does it before it builds
the site); ``python -m tools.docs_gen --check`` says which committed page differs from
what the code gives now (``tests/unit/test_docs_reference.py`` fails on the same).

- ``docs/reference/cli.md``: every command and flag, from ``contreact_cli.main.build_parser``;
- ``docs/reference/config.md``: every key of a run config and of an experiment file, with
  its type, default and limits, from the pydantic models (``RunConfig``, ``ExperimentFile``);
- ``docs/reference/events.md``: every event, from the JSON schemas in ``libs/events/schema``;
- ``docs/reference/api.md``: the dashboard's JSON API, from ``services/ui/openapi.json``;
- ``docs/reference/settings.md``: every environment setting, from each service's and the
  CLI's settings object;
- ``docs/benchmarks.md``: each benchmark's latest figure, from ``bench/results.jsonl``.
"""
