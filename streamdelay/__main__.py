"""``python -m streamdelay``: the same as the ``streamdelay`` command."""

from .cli import main

main()
