"""No deprecation warning comes from streamdelay's own code: every module imports, and the HTTP
app (its routes, its templates, its OpenAPI document) builds, with ``DeprecationWarning`` an
error. Litestar warns at route registration about the parameter styles it deprecates (the
inferred ``queue: str``, ``Parameter(query=...)``, ``Body()`` as a default,
``litestar.contrib.jinja``); those warnings name Litestar's module, not ours, so the
``filterwarnings`` of pyproject.toml (``error`` for what streamdelay's modules raise) does not
see them: this test does. A fresh interpreter: in this one the modules are imported already."""

from __future__ import annotations

import subprocess
import sys

CHECK = """
import importlib, pkgutil, warnings
warnings.simplefilter("error", DeprecationWarning)
import streamdelay
for info in pkgutil.walk_packages(streamdelay.__path__, "streamdelay."):
    if not info.name.endswith("__main__"):
        importlib.import_module(info.name)
from streamdelay.web.app import create_app
from streamdelay.web.serve_settings import ServeSettings
app = create_app(ServeSettings(url="redis://127.0.0.1:1", queues=("a",)))
assert app.openapi_schema.paths
print("clean")
"""


def test_streamdelay_imports_and_builds_its_app_with_deprecations_as_errors() -> None:
    done = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "clean", done.stderr[-3000:]
