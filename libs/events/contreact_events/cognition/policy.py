"""Seed 002's persistent memory, as a run option: the reserved key prefix.

Exchanges whose analysis scores above the run's threshold are stored in the agent's
memory under this prefix by the platform (logged memory tasks), never by the agent:
its ``write`` and ``delete`` are refused on these keys, while ``read`` and ``list``
see them. The dashboard marks entries under the prefix as persistent.
"""

from __future__ import annotations

PERSISTENT_PREFIX = "persistent/"
"""Memory keys the memory policy owns. Agent text cannot create or remove them."""


def is_persistent_key(key: str) -> bool:
    """Whether ``key`` lies under the memory policy's reserved prefix."""
    return key.startswith(PERSISTENT_PREFIX)
