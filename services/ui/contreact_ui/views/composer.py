"""The config composer's page: a form that composes a run config or an experiment
file. Nothing is stored: the form's values travel in the query."""

from __future__ import annotations

from collections.abc import Mapping

from contreact_ui.config_composer import COMPOSERS, compose
from contreact_ui.models import ComposePage


def compose_page(mode: str, values: Mapping[str, str], query: str) -> ComposePage:
    """The page for ``values`` (the query without ``mode``); ``query`` is the request's
    whole query, passed on to the download link."""
    sent = bool(values)
    composed = compose(mode, values)
    download = f"/compose.yaml?{query}" if composed.yaml and sent else None
    return ComposePage(
        mode=mode,
        modes=list(COMPOSERS),
        command=COMPOSERS[mode].command,
        values=composed.values,
        yaml=composed.yaml if sent else None,
        error=composed.error if sent else None,
        download=download,
        filename=composed.filename,
    )
