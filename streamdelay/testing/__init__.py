"""The testing kit (docs/testing.md): ``drain`` runs a worker's jobs now in the test's process,
``capture`` records what producer code enqueues with no server; the pytest plugin
(``streamdelay.testing.plugin``, registered by entry point with ``streamdelay[testing]``) gives
the fixtures ``sd_server`` and ``sd_queue``.

Nothing here imports pytest: the plugin module alone does.
"""

from .capturing import Captured, CapturedJob, capture
from .draining import DrainError, Outcome, drain, drain_async

__all__ = ["Captured", "CapturedJob", "DrainError", "Outcome", "capture", "drain",
           "drain_async"]
