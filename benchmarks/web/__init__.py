"""The HTTP service and the dashboard under load: a real ``streamdelay serve`` process driven
over keep-alive connections (requests, long polls, dashboard pages, the metrics pictures).

Named ``web`` like ``streamdelay.web``, not ``http``: ``python benchmarks/run_all.py`` puts
``benchmarks/`` first on ``sys.path``, where a package named ``http`` would hide the standard
library's.
"""
