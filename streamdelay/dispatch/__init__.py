"""Recurring jobs (docs/schedules.md): pure tick evaluation (``timing``), validated specs and
stored records (``spec``), the firing a dispatcher does (``firing``) and the operator plans
(``plans``). Sits between ``producer`` and ``telemetry``: the faces and the dispatcher use it.
"""
