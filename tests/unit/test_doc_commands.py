"""How a tutorial page's commands are read for ``tests/e2e/test_tutorials.py``: its
bash and python blocks, what a ``docs-test`` comment says about a block, and the exit
code a command is meant to give."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.doc_commands import Block, Command, blocks

PAGE = """\
# A page

<!-- docs-test: skip: another test runs it -->
```bash
make demo    # sets everything up
```

Text, and a block that is only shown:

```yaml
model_name: m
```

```bash
# a comment line
contreact run "configs/a b.yaml"
contreact replay r --what-if x=1  # exit 1: it would differ
```

<!-- docs-test: until: 3 of 3 recorded -->
```bash
contreact assess status --experiment e
```

```python
print("hello")
```
"""


def test_a_pages_blocks_are_read_with_what_their_comments_say(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(PAGE)
    assert blocks(page) == [
        Block((Command(("make", "demo")),), skip="another test runs it"),
        Block(
            (
                Command(("contreact", "run", "configs/a b.yaml")),
                Command(("contreact", "replay", "r", "--what-if", "x=1"), exit_code=1),
            )
        ),
        Block(
            (Command(("contreact", "assess", "status", "--experiment", "e")),),
            until="3 of 3 recorded",
        ),
        Block((Command(("python", 'print("hello")\n')),)),
    ]


def test_an_unknown_directive_is_named(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("<!-- docs-test: sometimes -->\n```bash\ncontreact runs\n```\n")
    with pytest.raises(ValueError, match="unknown docs-test directive 'sometimes'"):
        blocks(page)
