"""``python -m tools.docs_gen [--check]``: write the generated pages of the docs site, or
(``--check``) name each one that differs from what the code gives now."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from tools.docs_gen import (
    api_reference,
    bench_page,
    cli_reference,
    config_reference,
    events_reference,
    settings_reference,
)

ROOT = Path(__file__).resolve().parents[2]
PAGES: dict[str, Callable[[], str]] = {
    "docs/reference/cli.md": cli_reference.render,
    "docs/reference/config.md": config_reference.render,
    "docs/reference/events.md": events_reference.render,
    "docs/reference/api.md": api_reference.render,
    "docs/reference/settings.md": settings_reference.render,
    "docs/benchmarks.md": bench_page.render,
}


def stale_pages(root: Path = ROOT) -> list[str]:
    """The generated pages whose committed text (under ``root``) is not what the code
    gives now."""
    stale = []
    for name, render in PAGES.items():
        path = root / name
        if not path.is_file() or path.read_text(encoding="utf-8") != render():
            stale.append(name)
    return stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.docs_gen", description=__doc__)
    parser.add_argument("--check", action="store_true", help="only say which pages are stale")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_pages()
        for name in stale:
            print(f"{name} is stale: run `python -m tools.docs_gen` and commit it", file=sys.stderr)
        return 1 if stale else 0
    for name, render in PAGES.items():
        path = ROOT / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render(), encoding="utf-8")
        print(f"wrote {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
