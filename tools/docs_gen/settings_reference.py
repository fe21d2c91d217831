"""``docs/reference/settings.md``: every environment setting of the CLI and the services,
walked from their settings objects (one pydantic-settings class each, an env prefix)."""

from __future__ import annotations

import importlib
from typing import Any

from pydantic import AliasChoices
from pydantic_settings import BaseSettings

from tools.docs_gen.config_reference import _default, _limits, attribute_docs, type_name
from tools.docs_gen.markdown import banner, cell, code, prose, table

SETTINGS = (
    ("The CLI and `contreact up`", "contreact_cli.settings", "CLISettings"),
    ("Orchestrator", "contreact_orchestrator.settings", "OrchestratorSettings"),
    ("LLM worker", "contreact_llm.settings", "LLMWorkerSettings"),
    ("Memory service", "contreact_memory.settings", "MemorySettings"),
    ("Embedder", "contreact_embedder.settings", "EmbedderSettings"),
    ("Assessor", "contreact_assessor.settings", "AssessorSettings"),
    ("Dashboard", "contreact_ui.settings", "UISettings"),
)
"""Each settings object, in the order the page lists them."""


def env_names(model: type[BaseSettings], name: str, alias: Any) -> list[str]:
    """The environment variables a field is read from."""
    if isinstance(alias, AliasChoices):
        choices = [c for c in alias.choices if isinstance(c, str) and c.isupper()]
        if choices:
            return choices
    if isinstance(alias, str) and alias.isupper():
        return [alias]
    prefix = str(model.model_config.get("env_prefix") or "")
    return [f"{prefix}{name}".upper()]


def _section(title: str, model: type[BaseSettings]) -> str:
    docs = attribute_docs(model)
    rows = []
    for name, field in model.model_fields.items():
        doc = docs.get(name) or field.description or ""
        rows.append(
            [
                ", ".join(code(n) for n in env_names(model, name, field.validation_alias)),
                cell(type_name(field.annotation)),
                cell(_default(field)),
                cell(_limits(field)),
                prose(doc.split("\n\n")[0]),
            ]
        )
    intro = prose((model.__doc__ or "").split("\n\n")[0]) + "\n" if model.__doc__ else ""
    return "\n".join(
        [
            f"## {title} (`{model.__name__}`)\n",
            intro,
            table(["variable", "type", "default", "limits", "what it is"], rows),
        ]
    )


def render() -> str:
    sections = []
    for title, module, name in SETTINGS:
        model = getattr(importlib.import_module(module), name)
        sections.append(_section(title, model))
    return "\n".join(
        [
            banner("the settings objects of the CLI and the services"),
            "# Environment settings\n",
            "What a deployment sets (a run's own settings are in its config: "
            "[configuration keys](config.md)). Each process reads its own variables; "
            "`contreact up` passes its environment on to the services it starts, and "
            "compose sets them from `.env` (`.env.example` lists them). A mapping is "
            'given as JSON (`CONTREACT_LLM_HOSTS=\'{"http://gpu1:11434": {"parallel": '
            "4}}'`).\n",
            *sections,
        ]
    )
