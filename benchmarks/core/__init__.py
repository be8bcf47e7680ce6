"""What every benchmark shares: private redis-servers and worker processes (``harness``),
percentiles (``stats``), and the report writer (``report``, ``report_notes``, ``fragments``,
``targets``) that turns one run's figures into ``docs/benchmarks.md``.

The report's words (its prose, the words of its targets, its History) are markdown in
``docs/benchmarks-report/``, read by ``fragments``; this package holds code and numbers only.
``core`` imports no benchmark (the import-linter contract in pyproject.toml).
"""
