"""A history file survives a kill -9 of its writer (docs/reliability.md#histories): a real
process records operations as fast as it can and says on stdout which it recorded; it is
killed with SIGKILL mid-stream, and every record it had reported is read back, the rest of the
file parses (a torn last line skipped), and the same process name restarted appends after it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.system.nemesis.history import Recorder, load

ROOT = Path(__file__).resolve().parents[2]
WRITER = """
import os, sys
from pathlib import Path
from tests.system.nemesis.history import Recorder
rec = Recorder(Path(sys.argv[1]), "writer")
payload = "x" * int(sys.argv[2])
i = 0
while True:
    seq = rec.invoke("enqueue", f"j{i}", payload=payload)
    os.write(1, f"i{seq}\\n".encode())
    rec.complete(seq, "ok", due_ms=i)
    os.write(1, f"c{seq}\\n".encode())
    i += 1
"""

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize(("payload", "kill_after"), [(10, 400), (200_000, 15)])
def test_a_writer_killed_with_sigkill_loses_no_record_it_had_written(
        tmp_path: Path, payload: int, kill_after: int) -> None:
    child = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), str(payload)],
                             cwd=ROOT, stdout=subprocess.PIPE,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert child.stdout is not None
    reported: list[str] = []
    for line in child.stdout:
        reported.append(line.decode().strip())
        if len(reported) >= kill_after:
            break
    child.send_signal(signal.SIGKILL)
    reported += [line.decode().strip() for line in child.stdout]  # the pipe's rest
    assert child.wait() == -signal.SIGKILL

    records = load(tmp_path)
    have = {(("i" if r.phase == "invoke" else "c") + str(r.seq)) for r in records}
    assert set(reported) <= have  # everything reported written is there
    invokes = sorted(r.seq for r in records if r.phase == "invoke")
    assert invokes == list(range(len(invokes)))  # no gap, no duplicate
    assert len(invokes) - sum(x.startswith("i") for x in reported) <= 1  # written, unreported
    assert all(r.fields["payload"] == "x" * payload for r in records if r.phase == "invoke")

    again = Recorder(tmp_path, "writer")  # restarted under the same name: appends after
    seq = again.invoke("enqueue", "after-restart")
    again.complete(seq, "unknown", error="test")
    assert seq == invokes[-1] + 1
    tail = [r for r in load(tmp_path) if r.job == "after-restart"]
    assert [r.phase for r in tail] == ["invoke", "unknown"]
