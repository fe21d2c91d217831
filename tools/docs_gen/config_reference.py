"""``docs/reference/config.md``: every key of a run config and of an experiment file,
with its type, default, limits and the docstring the model gives it, walked from the
pydantic models the CLI, the orchestrator and the dashboard validate with."""

from __future__ import annotations

import ast
import inspect
import itertools
import textwrap
import types
import typing
from typing import Any

import annotated_types
from pydantic import BaseModel, StringConstraints
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from tools.docs_gen.markdown import banner, cell, code, prose, table

SIMPLE = {"StrictInt": "int", "StrictFloat": "float", "StrictBool": "bool", "StrictStr": "str"}


def attribute_docs(model: type[BaseModel]) -> dict[str, str]:
    """The docstring written under each field, on the model and the models it extends."""
    found: dict[str, str] = {}
    for klass in reversed(model.__mro__):
        if not (isinstance(klass, type) and issubclass(klass, BaseModel)) or klass is BaseModel:
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError):
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for before, after in itertools.pairwise(body):
            if (
                isinstance(before, ast.AnnAssign)
                and isinstance(before.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                found[before.target.id] = inspect.cleandoc(after.value.value)
    return found


def _constraints(metadata: list[Any]) -> list[str]:
    said = []
    for item in metadata:
        for kind, attribute, sign in (
            (annotated_types.Gt, "gt", ">"),
            (annotated_types.Ge, "ge", ">="),
            (annotated_types.Lt, "lt", "<"),
            (annotated_types.Le, "le", "<="),
        ):
            if isinstance(item, kind):
                bound = getattr(item, attribute)
                said.append(f"{sign} {bound:,}" if isinstance(bound, int) else f"{sign} {bound}")
        if isinstance(item, annotated_types.MaxLen):
            said.append(f"at most {item.max_length:,} long")
        if isinstance(item, annotated_types.MinLen) and item.min_length:
            said.append(f"at least {item.min_length:,} long")
        if isinstance(item, StringConstraints):
            if item.max_length is not None:
                said.append(f"at most {item.max_length:,} characters")
            if item.pattern is not None:
                said.append(f"matches {item.pattern}")
    return said


def _unwrap(annotation: Any) -> tuple[Any, list[Any]]:
    """The type under ``Annotated`` and the constraints it carried."""
    metadata: list[Any] = []
    while typing.get_origin(annotation) is typing.Annotated:
        annotation, *extra = typing.get_args(annotation)
        metadata += extra
    return annotation, metadata


def type_name(annotation: Any) -> str:
    annotation, _ = _unwrap(annotation)
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return " | ".join(repr(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(type_name(a) for a in args)
    if origin is tuple:
        return f"list of {type_name(args[0])}" if args else "list"
    if origin is dict:
        return f"mapping of {type_name(args[0])} to {type_name(args[1])}"
    if origin is list:
        return f"list of {type_name(args[0])}"
    if annotation is type(None):
        return "null"
    if annotation is typing.Any:
        return "any"
    if isinstance(annotation, type):
        if issubclass(annotation, BaseModel):
            return "section"
        return SIMPLE.get(annotation.__name__, annotation.__name__)
    return SIMPLE.get(str(annotation), str(annotation).replace("typing.", ""))


def _limits(field: FieldInfo) -> str:
    metadata = list(field.metadata)
    annotation = field.annotation
    for arg in (annotation, *typing.get_args(annotation)):
        metadata += _unwrap(arg)[1]
        for inner in typing.get_args(_unwrap(arg)[0]):
            metadata += _unwrap(inner)[1]
    return "; ".join(dict.fromkeys(_constraints(metadata)))


def _default(field: FieldInfo) -> str:
    if field.default_factory is not None:
        if field.default_factory not in (dict, list, tuple, set, frozenset):
            return "computed where it runs"  # a host name, a process id: not the page's
        value: object = field.default_factory()
    elif field.default is PydanticUndefined:
        return "required"
    else:
        value = field.default
    if isinstance(value, BaseModel):
        return ""
    if value == () or value == {}:
        return "(none)"
    if isinstance(value, str) and len(value) > 60:
        return f"{value[:57]}..."
    if isinstance(value, bool):
        return "true" if value else "false"
    return "null" if value is None else repr(value) if isinstance(value, str) else str(value)


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    annotation, _ = _unwrap(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    found = []
    for arg in typing.get_args(annotation):
        found += _models_in(arg)
    return found


def rows(model: type[BaseModel], prefix: str = "") -> list[list[str]]:
    docs = attribute_docs(model)
    out = []
    for name, field in model.model_fields.items():
        key = field.alias or name
        path = f"{prefix}{key}"
        nested = _models_in(field.annotation)
        doc = docs.get(name) or field.description or ""
        if nested and not doc:
            doc = inspect.cleandoc(nested[0].__dict__.get("__doc__") or "")
        first = doc.split("\n\n")[0]
        out.append(
            [
                code(path),
                cell(type_name(field.annotation)),
                cell(_default(field)),
                cell(_limits(field)),
                prose(first),
            ]
        )
        for inner in nested:
            many = typing.get_origin(_unwrap(field.annotation)[0]) is tuple or any(
                typing.get_origin(_unwrap(a)[0]) is tuple for a in typing.get_args(field.annotation)
            )
            out += rows(inner, f"{path}[]." if many else f"{path}.")
    return out


HEADER = ["key", "type", "default", "limits", "what it is"]


def render() -> str:
    from contreact_events.config import RunConfig
    from contreact_events.config.experiment import ExperimentConfig

    return "\n".join(
        [
            banner("the config models (`contreact_events.config`)"),
            "# Configuration keys\n",
            "Every key a run config (`contreact run FILE`) and an experiment file "
            "(`contreact experiment run FILE`) take. Validation is strict and the same in "
            "the CLI, the orchestrator and the dashboard: an unknown key, a mistyped value "
            '(`cycle_count: "10"`, `enabled: "yes"`), a value past its limit or a number '
            "that is not finite is refused with one line naming the key. A nested key is "
            "written with dots here and in `--set key=value`; `[]` is an item of a list.\n",
            "## Run config (`RunConfig`)\n",
            prose(inspect.getdoc(RunConfig) or "") + "\n",
            table(HEADER, rows(RunConfig)),
            "## Experiment file (`ExperimentConfig`)\n",
            prose((inspect.getdoc(ExperimentConfig) or "").split("\n\n")[0]) + "\n",
            table(HEADER, rows(ExperimentConfig)),
        ]
    )
