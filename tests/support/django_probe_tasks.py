"""A task of the Django integration tests (tests/system/test_integrations_django.py): appends
its label to the file ``PROBE_LOG`` names, so a test sees the order tasks ran in."""

import os

try:
    from django.tasks import task
except ImportError:  # the django-tasks backport
    from django_tasks import task


@task()
def record(label: str) -> str:
    with open(os.environ["PROBE_LOG"], "a", encoding="utf-8") as log:
        log.write(label + "\n")
    return label
