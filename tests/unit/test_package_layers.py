"""The package docstring names the import layers pyproject.toml's contract enforces, in its order
(docs/design.md; ``make lint`` runs import-linter): the two cannot drift apart again."""

from __future__ import annotations

import re
from pathlib import Path

import streamdelay

ROOT = Path(__file__).resolve().parents[2]


def contract_layers() -> list[str]:
    """The layers of the ``streamdelay`` layers contract, top first, each as ``a | b`` (read
    from the text: ``tomllib`` is 3.11+, the package supports 3.10)."""
    text = (ROOT / "pyproject.toml").read_text()
    block = next(b for b in re.findall(r"^layers = \[(.*?)^\]", text, re.S | re.M)
                 if '"streamdelay.base"' in b)
    return [" | ".join(name.strip().removeprefix("streamdelay.") for name in layer.split("|"))
            for layer in re.findall(r'"([^"]+)"', block)]


def test_the_docstring_lists_every_layer_in_the_contracts_order() -> None:
    doc = " ".join((streamdelay.__doc__ or "").split())
    chain = re.search(r"top to bottom: (.*?): a layer", doc)
    assert chain, doc
    named = [" | ".join(re.findall(r"``(\w+)``", part)) for part in chain.group(1).split(" > ")]
    assert named == contract_layers()
