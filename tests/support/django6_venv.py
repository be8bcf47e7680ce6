"""A venv with Django 6 (``django.tasks``, Python >= 3.12) and this checkout installed, for the
Django integration tests (tests/system/test_integrations_django.py).

The suite's own venv may run an older Python (3.10, 3.11: Django 5.2 and the django-tasks
backport), so this one is made with a Python >= 3.12 found on the machine (pyenv's versions,
``python3.1x`` on PATH, ``uv python find``), as ``.venv/django6-py3.X`` beside the suite's own,
once: ``pip install -e '.[django]'`` (the extra's markers pick Django >= 6.0 there). A stamp
holds what it was made from (that Python, the requirements in pyproject.toml); anything else,
or no stamp, installs again. An ``flock`` keeps two test processes (pytest-xdist) from
making it at once.
"""

from __future__ import annotations

import fcntl
import glob
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VENVS = ROOT / ".venv"
MINIMUM = (3, 12)
INSTALL_TIMEOUT = 600


def _version(python: str) -> tuple[int, int] | None:
    """``python``'s (major, minor), or None when it does not run."""
    try:
        done = subprocess.run([python, "-c", "import sys; print(*sys.version_info[:2])"],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    parts = done.stdout.split()
    return (int(parts[0]), int(parts[1])) if done.returncode == 0 and len(parts) == 2 else None


def candidates() -> list[str]:
    """Interpreters that may be >= 3.12: this one, pyenv's, PATH's, uv's."""
    found = [sys.executable]
    pyenv_root = os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv"))
    found += sorted(glob.glob(f"{pyenv_root}/versions/3.*/bin/python3"), reverse=True)
    for name in ("python3.14", "python3.13", "python3.12", "python3"):
        path = shutil.which(name)
        if path:
            found.append(path)
    if shutil.which("uv"):
        done = subprocess.run(["uv", "python", "find", ">=3.12"], capture_output=True,
                              text=True, timeout=60)
        if done.returncode == 0 and done.stdout.strip():
            found.append(done.stdout.strip())
    return found


def find_python() -> tuple[str, tuple[int, int]]:
    """The first interpreter >= 3.12 (an error naming where it looked when there is none)."""
    tried = candidates()
    for python in tried:
        version = _version(python)
        if version is not None and version >= MINIMUM:
            return python, version
    raise RuntimeError(f"no Python >= 3.12 on this machine (looked at {tried}); Django 6 "
                       f"needs one: install one (pyenv install 3.12, or the OS's python3.12)")


def _requirements() -> str:
    """What the venv installs from pyproject.toml: the dependencies and the django extra (the
    whole file where tomllib is missing, Python 3.10)."""
    text = (ROOT / "pyproject.toml").read_text()
    try:
        import tomllib
    except ImportError:
        return text
    project = tomllib.loads(text)["project"]
    return repr((project["dependencies"], project["optional-dependencies"]["django"]))


def django6_python() -> str:
    """The python of the Django 6 venv, made or brought up to date first."""
    base, version = find_python()
    venv = VENVS / f"django6-py{version[0]}.{version[1]}"
    python = venv / "bin" / "python"
    wanted = hashlib.sha256(f"{base}\n{_requirements()}".encode())
    stamp = venv / ".stamp"
    VENVS.mkdir(exist_ok=True)
    with open(VENVS / ".django6.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.is_file() and stamp.read_text() == wanted.hexdigest() and python.exists():
            return str(python)
        if not python.exists():
            subprocess.run([base, "-m", "venv", str(venv)], check=True, timeout=120)
        done = subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "-e",
             f"{ROOT}[django]"], capture_output=True, text=True, timeout=INSTALL_TIMEOUT)
        if done.returncode != 0:
            raise RuntimeError(f"installing Django 6 into {venv} failed:\n{done.stderr[-3000:]}")
        stamp.write_text(wanted.hexdigest())
    return str(python)
