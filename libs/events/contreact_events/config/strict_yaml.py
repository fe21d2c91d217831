"""YAML for config and experiment files, refusing a key given twice in one mapping.

PyYAML's ``safe_load`` keeps the last of two equal keys without a word, so a file with
``cycle_count: 1`` and, further down, ``cycle_count: 2`` ran two cycles. The YAML spec
says keys are unique; ``load_yaml`` holds to that, at every depth, and names the key
and both lines. Keys brought in by a merge (``<<: *defaults``) may still be overridden:
that is what a merge is for.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node, ScalarNode

MERGE_TAG = "tag:yaml.org,2002:merge"


class DuplicateKeyError(ConstructorError):
    """A mapping gives one key twice. A ``yaml.YAMLError``, so a caller that reports
    bad YAML reports this one too (``problem`` names the key and both lines)."""

    def __init__(self, key: Any, first: Node, second: Node) -> None:
        self.key = key
        self.first_line = first.start_mark.line + 1
        self.line = second.start_mark.line + 1
        shown = repr(key) if isinstance(key, str) else str(key)
        super().__init__(
            problem=(
                f"key {shown} is given twice (lines {self.first_line} and {self.line}): keep one"
            ),
            problem_mark=second.start_mark,
        )


class UniqueKeyLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a key given twice in a mapping."""

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, MappingNode):
            seen: dict[Any, Node] = {}
            for key_node, _value in node.value:
                if not isinstance(key_node, ScalarNode) or key_node.tag == MERGE_TAG:
                    continue
                key = self.construct_object(key_node)
                if key in seen:
                    raise DuplicateKeyError(key, seen[key], key_node)
                seen[key] = key_node
        return super().construct_mapping(node, deep=deep)


def load_yaml(text: str) -> Any:
    """The YAML document in ``text`` (safe tags only), every mapping's keys unique.
    Raises ``yaml.YAMLError`` (``DuplicateKeyError`` for a repeated key)."""
    return yaml.load(text, Loader=UniqueKeyLoader)
