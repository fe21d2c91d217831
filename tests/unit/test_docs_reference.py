"""The reference pages are generated from the code (``python -m tools.docs_gen``), never
written by hand: a committed page that differs from what the code gives now fails here,
and every command, flag, config key and event the code has is on its page."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import pytest

from tools.docs_gen.__main__ import PAGES, ROOT, stale_pages

DOCS = ROOT / "docs"


def test_the_generated_pages_are_what_the_code_gives() -> None:
    stale = stale_pages()
    assert not stale, (
        f"{', '.join(stale)} differ from the code: run `python -m tools.docs_gen` "
        "(or `make docs`) and commit the pages"
    )


def test_a_page_that_drifted_is_named(tmp_path: Path) -> None:
    """Broken on purpose: a committed page one line off, and one missing."""
    for name in PAGES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    cli_page = tmp_path / "docs/reference/cli.md"
    cli_page.write_text(cli_page.read_text() + "| `--hand-written` | a flag no parser has |\n")
    (tmp_path / "docs/reference/api.md").unlink()
    assert stale_pages(tmp_path) == ["docs/reference/cli.md", "docs/reference/api.md"]


def _parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found += _parsers(sub)
    return found


def test_every_command_and_flag_is_on_the_cli_page() -> None:
    from contreact_cli.main import build_parser

    page = (DOCS / "reference/cli.md").read_text()
    for parser in _parsers(build_parser()):
        command = " ".join(parser.prog.split()[1:])
        if command:
            assert f"## `contreact {command}`" in page, command
        for action in parser._actions:
            for flag in action.option_strings:
                if flag not in ("-h", "--help"):
                    assert f"`{flag}" in page or f", {flag}" in page, (command, flag)


def test_every_config_key_is_on_the_config_page() -> None:
    from contreact_events.config import RunConfig

    page = (DOCS / "reference/config.md").read_text()
    for name in RunConfig.model_fields:
        assert f"| `{name}` |" in page, name
    for name in ("diversity.moderate_threshold", "limits.memory_value_chars", "deadlines.llm_s"):
        assert f"| `{name}` |" in page, name
    assert "| `cycle_count` | int | required | &gt; 0; &lt;= 100,000 |" in page


def test_every_event_is_on_the_events_page() -> None:
    page = (DOCS / "reference/events.md").read_text()
    for filename in ("events.schema.json", "assessment-events.schema.json"):
        schema = json.loads((ROOT / "libs/events/schema" / filename).read_text())
        for name, version in schema["x-schema-versions"].items():
            section = page.split(f"### {name}\n", 1)
            assert len(section) == 2, name
            assert section[1].lstrip().startswith(f"Schema version {version}."), name


def test_every_api_path_is_on_the_api_page() -> None:
    page = (DOCS / "reference/api.md").read_text()
    document = json.loads((ROOT / "services/ui/openapi.json").read_text())
    for path, methods in document["paths"].items():
        for method in methods:
            assert f"## `{method.upper()} {path}`" in page


def test_every_environment_setting_is_on_the_settings_page() -> None:
    import importlib

    from tools.docs_gen.settings_reference import SETTINGS, env_names

    page = (DOCS / "reference/settings.md").read_text()
    for _title, module, name in SETTINGS:
        model = getattr(importlib.import_module(module), name)
        assert f"(`{name}`)" in page
        for field_name, field in model.model_fields.items():
            for env in env_names(model, field_name, field.validation_alias):
                assert f"`{env}`" in page, (name, field_name)
    assert "`CONTREACT_LLM_HOSTS`" in page and "`CONTREACT_UI_PORT`" in page


@pytest.mark.parametrize("name", sorted(PAGES))
def test_a_generated_page_says_so(name: str) -> None:
    head = (ROOT / name).read_text().split("\n# ", 1)[0]
    assert "<!-- Generated from " in head and "by `python -m tools.docs_gen`" in head
