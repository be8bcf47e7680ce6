"""Typed tasks under the type checker (docs/typed-tasks.md): ``mypy --strict`` run as a user runs
it, in a subprocess, passes the good files (tests/support/typing/good_tasks.py and the page's
example) and reports an error on exactly the marked lines of the bad one."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TYPING = ROOT / "tests" / "support" / "typing"
GOOD = [TYPING / "good_tasks.py", ROOT / "docs" / "examples" / "typed_tasks.py"]
BAD = TYPING / "bad_tasks.py"
ERROR = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+): error: (?P<text>.*)$")
MARK = re.compile(r"  # E: (?P<text>[^`]+)$")  # two spaces: the docstring names it too

pytestmark = pytest.mark.timeout(300)


def mypy_errors(tmp_path: Path, *files: Path) -> dict[tuple[str, int], list[str]]:
    """``mypy --strict`` of ``files`` (its own cache): (file name, line) -> error texts."""
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "--hide-error-context",
         "--cache-dir", str(tmp_path / "cache"), *map(str, files)],
        cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert done.returncode in (0, 1), done.stdout + done.stderr  # 2: mypy itself failed
    found: dict[tuple[str, int], list[str]] = {}
    for line in done.stdout.splitlines():
        match = ERROR.match(line)
        if match:
            key = (Path(match["path"]).name, int(match["line"]))
            found.setdefault(key, []).append(match["text"])
    return found


def test_good_files_pass_and_bad_lines_fail_under_strict_mypy(tmp_path: Path) -> None:
    errors = mypy_errors(tmp_path, *GOOD, BAD)
    for good in GOOD:
        assert not [k for k in errors if k[0] == good.name], (good.name, errors)
    marked = {(BAD.name, number): MARK.search(line)["text"]  # type: ignore[index]
              for number, line in enumerate(BAD.read_text().splitlines(), 1)
              if MARK.search(line)}
    assert len(marked) >= 10
    assert set(errors) == set(marked), (sorted(errors), sorted(marked))
    for key, expected in marked.items():
        assert any(expected in text for text in errors[key]), (key, expected, errors[key])
