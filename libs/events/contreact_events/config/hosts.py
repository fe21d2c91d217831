"""What a model host and a model name may be, checked the same way wherever one is taken.

A host is recorded (run logs, assessment records, task streams, the LLM worker's
routes, exports) and shown (logs, pages, ``--json``), so a ``user:password@`` in it
would spread a secret everywhere it goes: it is refused, and the refusal never repeats
the URL. A host given on the command line (``contreact assess --host``) must also be
an http(s) URL with a host part; a ``file://``, ``javascript:`` or "not a url" would be
queued and fail minutes later. A model name is one line of printable text.

Pure: the config's validators, the CLI and the bus call these.
"""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import urlsplit

CREDENTIALS = re.compile(r"^[a-z][a-z0-9+.-]*://[^/@?#]*@", re.IGNORECASE)
"""A URL whose authority holds userinfo (``scheme://user:password@host``)."""
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
MAX_CHARS = 256
CREDENTIALS_FIX = (
    "a host must not hold credentials (user:password@): hosts are recorded in run logs, "
    "assessment records and exports; put a proxy in front (an OpenAI-compatible key goes "
    "in the environment, named by api_key_env)"
)


_USERINFO = re.compile(r"([a-z][a-z0-9+.-]*://)[^/@?#\s]*@", re.IGNORECASE)


def without_credentials(text: str) -> str:
    """``text`` with the userinfo of every URL in it replaced by ``***`` (a form's value
    shown back, a line logged)."""
    return _USERINFO.sub(r"\1***@", text)


def has_credentials(url: str) -> bool:
    """Whether ``url`` carries userinfo (a user, a password) before its host."""
    return bool(CREDENTIALS.match(url.strip()))


def _unprintable(text: str) -> str | None:
    for char in text:
        if unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp"):
            return "a control character"
        if char.isspace():
            return "a space"
    return None


def _shape(text: str, fix: str) -> tuple[str, str | None]:
    """(how ``text`` is shown in a message, why its characters or length will not do)."""
    shown = repr(text[:60]) + ("..." if len(text) > 60 else "")
    bad = _unprintable(text)
    if bad is not None:
        return shown, f"{shown} holds {bad}: {fix}"
    if len(text) > MAX_CHARS:
        return shown, f"{shown} is longer than {MAX_CHARS} characters: {fix}"
    return shown, None


def host_problem(url: str) -> str | None:
    """Why ``url`` is not a model host (an http(s) URL with a host and no
    credentials), in words that never repeat a secret; None when it is one."""
    if has_credentials(url):
        return CREDENTIALS_FIX
    if not url:
        return "is empty: give an http(s) URL (e.g. http://localhost:11434)"
    shown, problem = _shape(url, "give an http(s) URL (e.g. http://localhost:11434)")
    if problem is not None:
        return problem
    scheme = _SCHEME.match(url)
    if scheme is not None and "://" in url and scheme.group(1).lower() not in ("http", "https"):
        return (
            f"{shown}: a model host is reached over http(s), not {scheme.group(1)}: "
            "give an http(s) URL (e.g. http://localhost:11434)"
        )
    if scheme is None or "://" not in url:
        return f"{shown} is not a URL: give an http(s) URL (e.g. http://localhost:11434)"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (raises on a port that is not a number or out of range)
    except ValueError:
        return f"{shown} has a bad port: give an http(s) URL (e.g. http://localhost:11434)"
    if not parts.hostname:
        return f"{shown} names no host: give an http(s) URL (e.g. http://localhost:11434)"
    return None


def model_problem(name: str) -> str | None:
    """Why ``name`` is not a model name (one line of printable text, at most 256
    characters); None when it is one."""
    if not name.strip():
        return "is empty: name a model (e.g. llama3.1:8b)"
    return _shape(name, "a model name is one word (e.g. llama3.1:8b)")[1]
