"""``python -m tests.support.ui_warm_hold``: the dashboard (``contreact_ui``'s own
``main``) whose search-model warm-up stays in PyTorch's C++ code until the file
``$HOLD_RELEASE`` exists (it touches ``$HOLD_ENTERED`` once it is in there), so that a
test can send SIGTERM while the warm-up is under way, every time. Only the model's
timing is held: the ops are PyTorch's, which release the GIL as the real model does."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import torch

from contreact_ui import app as ui_app
from contreact_ui.main import main
from contreact_ui.semantic import TextEmbedder
from tests.support.experiment_runs import ToyEmbedding, ToyModel


class InTorch(ToyModel):
    def __init__(self, entered: Path, release: Path) -> None:
        self.entered, self.release = entered, release

    def embed_batch(self, texts: Sequence[str]) -> list[ToyEmbedding]:
        self.entered.touch()
        x = torch.full((512, 512), 1e-3)
        while not self.release.exists():  # each op runs in C++ with the GIL released
            x = torch.nn.functional.linear(x, x).clamp_(-1.0, 1.0)
        return super().embed_batch(texts)


def held_embedder() -> TextEmbedder:
    return TextEmbedder(InTorch(Path(os.environ["HOLD_ENTERED"]), Path(os.environ["HOLD_RELEASE"])))


if __name__ == "__main__":
    ui_app.TextEmbedder = held_embedder  # type: ignore[attr-defined,assignment]
    main()
