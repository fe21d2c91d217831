"""``python -m tools.dashboard_screenshot URL OUT.png``: a screenshot of one dashboard page
with the browser tests' Chromium and Playwright (``tests/browser/conftest.py``), for the
README and the docs (``docs/img/dashboard.png`` was taken so from the first two
tutorials' runs on a stack of ``contreact up``)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from playwright.sync_api import sync_playwright

from tests.browser.conftest import CHROMIUM_FLAGS


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tools.dashboard_screenshot")
    parser.add_argument("url", help="a dashboard page, e.g. http://127.0.0.1:8765/runs/RUN")
    parser.add_argument("out", type=Path, help="the PNG file to write")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=860)
    args = parser.parse_args(argv)
    chromium = os.environ.get("CONTREACT_CHROMIUM", "/usr/bin/chromium")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_FLAGS)
        page = browser.new_page(viewport={"width": args.width, "height": args.height})
        page.goto(args.url, wait_until="networkidle")
        args.out.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(args.out))
        browser.close()
    print(f"wrote {args.out} ({args.out.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
