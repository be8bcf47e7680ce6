"""The ``streamdelay`` command: commands, options, output, support and the demo."""

from .commands import cli, main

__all__ = ["cli", "main"]
