"""Pydantic's validation report turned into one readable line per problem."""

from __future__ import annotations

from pydantic import BaseModel, ValidationError


def describe_validation_error(exc: ValidationError, root: type[BaseModel]) -> str:
    """One line per problem: where, what, and for unknown keys the keys that are allowed."""
    problems = []
    errors = exc.errors()
    inner = {tuple(e["loc"][:n]) for e in errors for n in range(1, len(e["loc"]))}
    for error in errors:
        if error["type"] == "too_short" and tuple(error["loc"]) in inner:
            continue  # a list whose items failed: the items' errors say it
        where = ".".join(str(part) for part in error["loc"]) or "(top level)"
        where = where.encode("unicode_escape").decode("ascii")  # a key may hold a newline
        kind = error["type"]
        if kind == "extra_forbidden":
            allowed = _allowed_keys(error["loc"], root)
            problems.append(f"unknown key '{where}' (allowed here: {allowed})")
        elif kind == "missing":
            problems.append(f"missing required key '{where}'")
        elif where.endswith("api_key_env"):  # it may hold a pasted key: never echo it
            problems.append(f"'{where}' {error['msg'].lower()}")
        elif kind == "value_error":  # our own validators: the message says it all
            problems.append(str(error["msg"]).removeprefix("Value error, "))
        else:
            given = error.get("input")
            shown = repr(given) if not isinstance(given, dict | list) else type(given).__name__
            if len(shown) > 60:
                shown = f"{shown[:57]}... ({len(str(given))} characters)"
            problems.append(f"'{where}' {error['msg'].lower()} (got {shown})")
    return "; ".join(problems)


def _allowed_keys(loc: tuple[int | str, ...], root: type[BaseModel]) -> str:
    model = root
    for part in loc[:-1]:
        field = model.model_fields.get(str(part))
        annotation = getattr(field, "annotation", None)
        candidates = [annotation, *getattr(annotation, "__args__", ())]
        nested = [c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)]
        if not nested:
            break
        model = nested[0]
    return ", ".join(field.alias or name for name, field in model.model_fields.items())
