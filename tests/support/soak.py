"""`make soak` runs a few tests at the lengths their issues name (a 60 s schedule run with kills, a
30 s gap with no dispatcher, a 20 s rate window); `make test` runs them shorter."""

from __future__ import annotations

import os

SOAK = os.environ.get("STREAMDELAY_SOAK") == "1"
