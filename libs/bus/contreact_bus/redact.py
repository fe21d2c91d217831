"""Keeping secrets out of what is printed, logged or recorded.

A Redis URL may carry a password (``redis://user:PASSWORD@host``); wherever a URL is
shown (errors, ``contreact status``, ``up``), the password is replaced by ``***``.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

HIDDEN = "***"


def redact_url(url: str) -> str:
    """``url`` with its password (if any) replaced by ``***``."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return HIDDEN
    if not parts.password:  # none, or empty (compose's URL when no password is set)
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 address
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port is not None else ""
    netloc = f"{user}:{HIDDEN}@{host}{port}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
