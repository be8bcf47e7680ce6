"""``python manage.py streamdelay_worker``: run the tasks of a streamdelay task backend
(docs/integrations.md#django). SIGINT/SIGTERM stop it gracefully, as ``streamdelay worker``."""

from __future__ import annotations

import logging
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from .....base.errors import StreamdelayError
from ...backend import StreamdelayBackend
from ...framework import task_backends
from ...task_worker import build_worker


class Command(BaseCommand):  # type: ignore[misc]
    """Serve the jobs of one backend's Django queues until stopped (or idle)."""

    help = ("Run Django tasks enqueued through streamdelay.contrib.django.StreamdelayBackend "
            "(SIGINT/SIGTERM stop it gracefully).")

    def add_arguments(self, parser: CommandParser) -> None:
        """The worker's options (docs/worker.md)."""
        parser.add_argument("--backend", default="default",
                            help="the alias in TASKS (default: default)")
        parser.add_argument("--queue-name", action="append", dest="queue_names",
                            metavar="NAME", help="a Django queue to run (repeat; default: "
                            "every name of the backend's QUEUES)")
        parser.add_argument("--concurrency", type=int, default=10,
                            help="tasks run at once, each in a thread (default 10)")
        parser.add_argument("--group", default=None, help="the consumer group")
        parser.add_argument("--consumer", default=None, help="this worker's consumer name")
        parser.add_argument("--no-dispatch", action="store_true",
                            help="leave promoting due jobs to other workers or dispatchers")
        parser.add_argument("--handler-timeout", type=float, default=None,
                            help="seconds one task may run (default: the queue's, 300)")
        parser.add_argument("--shutdown-grace", type=float, default=30.0,
                            help="seconds running tasks get to finish on SIGTERM (default 30)")
        parser.add_argument("--metrics-port", type=int, default=None,
                            help="serve Prometheus metrics on this port")
        parser.add_argument("--until-idle", action="store_true",
                            help="exit once nothing is delayed, ready or running (tests)")

    def handle(self, *args: Any, **options: Any) -> None:
        """Build the worker and serve."""
        alias = options["backend"]
        try:
            backend = task_backends()[alias]
        except Exception as exc:
            raise CommandError(f"no task backend {alias!r}: {exc}") from None
        if not isinstance(backend, StreamdelayBackend):
            raise CommandError(f"TASKS[{alias!r}] is {type(backend).__name__}, not "
                               f"streamdelay.contrib.django.StreamdelayBackend")
        settings: dict[str, Any] = {"concurrency": options["concurrency"],
                                    "dispatch": not options["no_dispatch"],
                                    "shutdown_grace": options["shutdown_grace"],
                                    "metrics_port": options["metrics_port"]}
        for name in ("group", "consumer", "handler_timeout"):
            if options[name] is not None:
                settings[name] = options[name]
        if options["verbosity"] > 0 and not logging.getLogger().handlers:
            logging.basicConfig(level=logging.DEBUG if options["verbosity"] > 2 else
                                logging.INFO, format="%(asctime)s %(levelname)s %(name)s: "
                                "%(message)s")
        try:
            worker = build_worker(backend, options["queue_names"], **settings)
        except (ValueError, StreamdelayError) as exc:
            raise CommandError(str(exc)) from None
        self.stderr.write(f"streamdelay worker: queue {backend.queue_name!r}, Django queues "
                          f"{', '.join(worker.topics)}, concurrency {worker.concurrency}")
        worker.run(until_idle=options["until_idle"])
