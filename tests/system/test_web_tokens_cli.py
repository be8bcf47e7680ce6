"""``streamdelay serve`` refuses bad token files and variables in one line, naming where
(docs/http.md#tokens); the pure token, session and settings tests are
tests/unit/test_web_tokens.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from streamdelay.base.errors import ConfigError
from streamdelay.web.tokens import load_tokens
from tests.support.web_server import ROOT

GOOD = "app:app-token-0123456789:write,consume;ops:ops-token-0123456789:read,admin"


def test_the_cli_refuses_a_bad_token_file_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_text("ops:short:read\n")
    env = {key: value for key, value in os.environ.items() if key != "STREAMDELAY_TOKENS"}
    done = subprocess.run([sys.executable, "-m", "streamdelay", "serve", "--queue", "q",
                           "--token-file", str(path)], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=60)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "tokens:" in done.stderr
    assert "Traceback" not in done.stderr


def test_token_errors_name_the_file_and_line_or_the_variable_and_entry(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_text("# operators\nops:ops-token-0123456789:read\n\napp:short:write\n")
    with pytest.raises(ConfigError) as caught:
        load_tokens(str(path), None)
    assert f"{path} line 4: app: a token needs at least 16" in str(caught.value)
    with pytest.raises(ConfigError) as caught:
        load_tokens(None, "ops:ops-token-0123456789:read;app:app-token-0123456789:fly")
    assert "STREAMDELAY_TOKENS entry 2: app: unknown or no scopes" in str(caught.value)
    path.write_text("ops:ops-token-0123456789:read\n")
    with pytest.raises(ConfigError, match="STREAMDELAY_TOKENS entry 1: the name 'ops' is given"):
        load_tokens(str(path), "ops:ops-token-9876543210:write")
    env = {key: value for key, value in os.environ.items() if key != "STREAMDELAY_TOKENS"}
    path.write_text("ops:ops-token-0123456789:read\nbad line\n")
    done = subprocess.run([sys.executable, "-m", "streamdelay", "serve", "--queue", "q",
                           "--token-file", str(path)], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=60)
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert f"{path} line 2: not name:token:scopes" in done.stderr
