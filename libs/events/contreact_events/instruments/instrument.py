"""Instruments as data: a prompt text, an answer scale or label set, and a citation.

Each instrument is a YAML file under ``protocol/instruments/`` naming its prompt file
(the exact text of the user turn asked after the rated history). The PEI prompt is the
paper's Box 2 verbatim (``protocol/pei_scale.txt``, the one copy the platform ships),
and its ten levels are read from that text's numbered lines, so the two cannot differ.

Two ship: ``pei`` and ``patterns``, a rubric of the paper's three behavioural patterns
(sections 5.1-5.3, in the platform's own words, ``patterns_rubric.txt``) answered with
``Pattern: <label>`` and ``Reason: <one sentence>``; the paper's own label for each of
its 18 runs is in ``protocol/paper_results.yaml`` under the same keys. Changing a prompt
text means raising the instrument's version: the text hash (``text_sha256``) in every
record shows it anyway. An unknown name is refused in one line listing the known ones.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Literal

from contreact_events.config.strict_yaml import load_yaml
from contreact_events.exceptions import UnknownInstrument

INSTRUMENT_NAMES = ("pei", "patterns")
"""Every instrument the platform ships, by name."""

InstrumentKind = Literal["scale", "labels"]


@dataclass(frozen=True)
class Level:
    """One level of a scale: its number, its short title and its full text."""

    value: int
    title: str
    text: str


@dataclass(frozen=True)
class Label:
    """One label of a rubric. ``synonyms`` name it anywhere in an answer; ``short``
    words name it only on the answer's own line (``Pattern: recursive``)."""

    key: str
    number: int
    title: str
    description: str
    synonyms: tuple[str, ...]
    short: tuple[str, ...] = ()


@dataclass(frozen=True)
class Instrument:
    """An assessment instrument: what the evaluator is asked, and what it may answer."""

    name: str
    version: str
    """Raised whenever the prompt text or the answer set changes."""
    kind: InstrumentKind
    title: str
    prompt: str
    """The exact text of the user turn that follows the rated history."""
    text_sha256: str
    """SHA-256 of ``prompt`` (UTF-8): a changed text shows in every record."""
    citation: str
    answer_format: str
    """What the prompt asks the answer to look like (in words)."""
    levels: tuple[Level, ...] = ()
    """The scale's levels, lowest first (kind "scale")."""
    labels: tuple[Label, ...] = ()
    """The rubric's labels (kind "labels")."""
    evaluator_temperature: float = 0.1
    """The temperature an evaluator answers at (the paper's 0.1), unless told otherwise."""

    @property
    def scale_min(self) -> int:
        return self.levels[0].value if self.levels else 0

    @property
    def scale_max(self) -> int:
        return self.levels[-1].value if self.levels else 0

    def label(self, key: str) -> Label:
        for label in self.labels:
            if label.key == key:
                return label
        known = ", ".join(label.key for label in self.labels)
        raise KeyError(f"instrument {self.name} has no label {key!r} (known: {known})")


def load_instrument(name: str) -> Instrument:
    """The shipped instrument called ``name``; an unknown name is refused in one line
    that lists the known ones."""
    if name not in INSTRUMENT_NAMES:
        known = ", ".join(INSTRUMENT_NAMES)
        raise UnknownInstrument(f"unknown instrument {name!r}: use one of {known}")
    return _load(name)


@cache
def _load(name: str) -> Instrument:
    data = load_yaml(_read(f"instruments/{name}.yaml"))
    return instrument_from_data(data, _read(str(data["prompt_file"])))


def instrument_from_data(data: dict[str, Any], prompt: str) -> Instrument:
    """Build an instrument from its YAML mapping and the text of its prompt file."""
    kind: InstrumentKind = data["kind"]
    levels: tuple[Level, ...] = ()
    labels: tuple[Label, ...] = ()
    if kind == "scale":
        scale = data["scale"]
        levels = levels_of(prompt)
        values = [level.value for level in levels]
        expected = list(range(int(scale["min"]), int(scale["max"]) + 1))
        if values != expected:
            raise ValueError(
                f"instrument {data['name']}: the prompt numbers levels {values}, "
                f"the scale says {expected[0]}-{expected[-1]}"
            )
    else:
        labels = tuple(
            Label(
                key=str(item["key"]),
                number=int(item["number"]),
                title=str(item["title"]),
                description=" ".join(str(item["description"]).split()),
                synonyms=tuple(str(s) for s in item["synonyms"]),
                short=tuple(str(s) for s in item.get("short", ())),
            )
            for item in data["labels"]
        )
    return Instrument(
        name=str(data["name"]),
        version=str(data["version"]),
        kind=kind,
        title=str(data["title"]),
        prompt=prompt,
        text_sha256=hashlib.sha256(prompt.encode("utf-8")).hexdigest(),
        citation=" ".join(str(data["citation"]).split()),
        answer_format=" ".join(str(data["answer_format"]).split()),
        levels=levels,
        labels=labels,
        evaluator_temperature=float(data.get("evaluator_temperature", 0.1)),
    )


_LEVEL_LINE = re.compile(r"^(\d{1,2})\. ([^:\n]{1,80}): (.+)$", re.MULTILINE)


def levels_of(prompt: str) -> tuple[Level, ...]:
    """The numbered lines of a scale's prompt (``N. Title: text``), in order."""
    return tuple(
        Level(value=int(m.group(1)), title=m.group(2).strip(), text=m.group(3).strip())
        for m in _LEVEL_LINE.finditer(prompt)
    )


def _read(relative: str) -> str:
    path = resources.files("contreact_events").joinpath("protocol", *relative.split("/"))
    return path.read_text("utf-8")
