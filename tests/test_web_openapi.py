"""``/openapi.json`` of a live ``streamdelay serve``: a valid OpenAPI 3.1 document
(openapi-spec-validator), and schemathesis fuzzing every operation against it: no 5xx, every
answer documented and matching its schema, bodies that break the schema refused with 4xx and
the error shape (docs/http.md#openapi).

Kept to ~10-30 s: a few examples per operation, and long polls capped at 200 ms by
tests/schemathesis_hooks.py (the schema allows 30 s). The positive-data check is not run: a
value can fit the schema and still be refused by the library (a receipt that does not decode,
an ``at`` in the past), which is a documented 422, not a defect.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openapi_spec_validator import validate

from tests.redis_server import RedisServer
from tests.web_server import ROOT, WebServer

CHECKS = ["not_a_server_error", "status_code_conformance", "content_type_conformance",
          "response_schema_conformance", "negative_data_rejection"]


@pytest.fixture(scope="module")
def fuzzed_server(shared_redis: RedisServer) -> Iterator[WebServer]:
    """A service of its own: fuzzing writes, pauses and purges at random."""
    with WebServer(shared_redis.url, ["fuzzq"]) as server:
        yield server


@pytest.fixture(scope="module")
def document(fuzzed_server: WebServer) -> dict[str, Any]:
    """The served OpenAPI document."""
    with urllib.request.urlopen(fuzzed_server.url + "/openapi.json", timeout=10) as answer:
        found: dict[str, Any] = json.load(answer)
    return found


def test_the_document_is_valid_openapi_3_1(document: dict[str, Any]) -> None:
    assert document["openapi"].startswith("3.1.")
    validate(document)
    paths = set(document["paths"])
    assert {"/v1/queues/{queue}/jobs", "/v1/queues/{queue}/jobs:batch",
            "/v1/queues/{queue}/jobs/{id}", "/v1/queues/{queue}/jobs/{id}:reschedule",
            "/v1/queues/{queue}/stats", "/v1/queues/{queue}/dead",
            "/v1/queues/{queue}/dead:replay", "/v1/queues/{queue}/dead:purge",
            "/v1/queues/{queue}/topics/{topic}:pause", "/v1/queues/{queue}/topics/{topic}:resume",
            "/v1/queues/{queue}/topics/{topic}:reserve",
            "/v1/queues/{queue}/deliveries/{receipt}:ack",
            "/v1/queues/{queue}/deliveries/{receipt}:fail",
            "/v1/queues/{queue}/deliveries/{receipt}:touch", "/healthz"} <= paths
    enqueue = document["paths"]["/v1/queues/{queue}/jobs"]["post"]
    assert enqueue["requestBody"]["required"] is True
    assert {"200", "201", "400", "401", "403", "404", "413", "422", "503"} <= \
        set(enqueue["responses"])
    body = document["components"]["schemas"]["EnqueueBody"]
    assert body["additionalProperties"] is False and body["required"] == ["topic"]
    # results and progress (docs/results.md): the route, its answers and the new fields
    result = document["paths"]["/v1/queues/{queue}/jobs/{id}/result"]["get"]
    assert {"200", "204", "404"} <= set(result["responses"])
    assert "wait_ms" in {p["name"] for p in result["parameters"]}
    assert "keep_result" in body["properties"]
    schemas = document["components"]["schemas"]
    assert "result" in schemas["AckBody"]["properties"]
    assert "progress" in schemas["TouchBody"]["properties"]
    assert "progress" in schemas["JobInfo"]["properties"]
    assert document["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"


def _schemathesis(server: WebServer, tmp_path: Path, *options: str) -> str:
    env = {**os.environ, "SCHEMATHESIS_HOOKS": "tests.schemathesis_hooks",
           "PYTHONPATH": str(ROOT), "STREAMDELAY_FUZZ_QUEUE": server.queues[0]}
    done = subprocess.run(
        [str(Path(sys.executable).parent / "st"), "run", server.url + "/openapi.json",
         "-H", f"Authorization: Bearer {server.token('admin')}",
         "--checks", ",".join(CHECKS), "--max-examples", "8", "--seed", "1",
         "--request-timeout", "40", "--generation-database", "none", "--no-color",
         "--workers", "1", *options],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=240)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-8000:]
    assert " failed" not in output and " passed" in output
    return output


def test_fuzzed_requests_get_documented_answers(fuzzed_server: WebServer,
                                                tmp_path: Path) -> None:
    """schemathesis's own runner: its examples, fuzzing and stateful phases on every
    operation; its coverage phase (boundary values) on all but reserve, whose boundary is a
    30 s long poll that the hooks cannot shorten in that phase."""
    _schemathesis(fuzzed_server, tmp_path, "--phases", "examples,fuzzing,stateful")
    _schemathesis(fuzzed_server, tmp_path, "--phases", "coverage",
                  "--exclude-path-regex", ":reserve$")
    assert "Traceback" not in fuzzed_server.log_text()
