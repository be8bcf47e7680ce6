"""The nemesis run: faults, workloads, and the history they are checked on (SPEC §22)."""
