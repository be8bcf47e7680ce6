"""``streamdelay jobs search`` and ``streamdelay jobs bulk`` (docs/cli.md#search-and-bulk)
against a real Redis: the search prints its matches and cursor, the bulk command counts first,
asks, and acts; ``jobs QUEUE --state`` (the list) still works."""

from __future__ import annotations

import json
import subprocess

import streamdelay as sd
from tests.test_cli import ROOT, cli, cli_env, cli_many, command


def _fill(queue: sd.Queue) -> None:
    for i in range(12):
        queue.enqueue("mail" if i % 2 else "sms", {"tenant": "acme" if i % 3 == 0 else "b",
                                                   "n": i}, id=f"j{i:02d}", delay=600 + i)


def test_search_prints_matches_and_follows_the_cursor(redis_url: str, queue: sd.Queue) -> None:
    _fill(queue)
    name = queue.name
    one, every, listed, as_json = cli_many([
        ["jobs", "search", name, "--body", "tenant=acme", "--scan", "5"],
        ["jobs", "search", name, "--body", "tenant=acme", "--scan", "5", "--all"],
        ["jobs", name, "--state", "delayed", "--limit", "3"],
        ["jobs", "search", name, "--state", "delayed", "--topic", "sms", "--json"]],
        url=redis_url)
    assert one.returncode == 0, one.stderr
    assert "5 examined; more: add --cursor delayed:" in one.stdout
    assert [line.split()[0] for line in one.stdout.splitlines()[1:-1]
            if not line.startswith(" ")] == ["j00", "j03"]
    found = [line.split()[0] for line in every.stdout.splitlines()
             if line.startswith("j")]
    assert found == ["j00", "j03", "j06", "j09"] and every.stdout.rstrip().endswith("complete")
    assert listed.returncode == 0 and "more: add --cursor" in listed.stdout  # jobs = jobs list
    page = json.loads(as_json.stdout)
    assert [j["id"] for j in page["jobs"]] == ["j00", "j02", "j04", "j06", "j08", "j10"]
    assert page["cursor"] is None


def test_bulk_dry_run_counts_asks_then_acts(redis_url: str, queue: sd.Queue) -> None:
    _fill(queue)
    name = queue.name
    order = ["jobs", "bulk", name, "cancel", "--state", "delayed", "--body", "tenant=b",
             "--scan", "4"]
    dry = cli(*order, "--dry-run", url=redis_url)
    assert dry.returncode == 0 and dry.stdout.strip() == "would cancel 8 jobs (12 examined)"
    refused = subprocess.run(command(*order), input="n\n", capture_output=True, text=True,
                             env=cli_env(redis_url), cwd=ROOT, timeout=60)
    assert refused.returncode == 1 and "cancel 8 jobs of queue" in refused.stderr
    assert len(queue.search(state="delayed").jobs) == 12  # nothing changed
    done = subprocess.run(command(*order), input="y\n", capture_output=True, text=True,
                          env=cli_env(redis_url), cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "cancelled 8 of 8 matched (12 examined)"
    assert "to resume: --cursor delayed:" in done.stderr  # progress, call by call
    assert sorted(j.id for j in queue.search(state="delayed").jobs) == ["j00", "j03", "j06",
                                                                        "j09"]
    moved = cli("jobs", "bulk", name, "reschedule", "--state", "delayed", "--delay", "2h",
                "--yes", "--json", url=redis_url)
    assert json.loads(moved.stdout)["changed"] == 4
    bad = cli("jobs", "bulk", name, "cancel", "--topic", "sms", "--yes", url=redis_url)
    assert bad.returncode != 0 and "needs one state" in bad.stderr
