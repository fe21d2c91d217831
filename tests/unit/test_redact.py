"""Redis URLs are shown with their password hidden, and only when there is one."""

from __future__ import annotations

import pytest

from contreact_bus.redact import redact_url


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"),
        ("redis://:s3cret@redis:6379/0", "redis://:***@redis:6379/0"),
        ("redis://contreact:s3cret@redis:6379/0", "redis://contreact:***@redis:6379/0"),
        (
            "rediss://u:p%40ss@[::1]:6380/0?ssl_ca_certs=/c.pem",
            "rediss://u:***@[::1]:6380/0?ssl_ca_certs=/c.pem",
        ),
        ("redis://:@redis:6379/0", "redis://:@redis:6379/0"),  # compose without a password
        ("redis://[not-a-host/0", "***"),
    ],
)
def test_the_password_is_hidden(url: str, shown: str) -> None:
    assert redact_url(url) == shown
