"""The dashboard's Jinja2 templates (shipped in the package, ``templates/``): one environment,
autoescaped, loaded once per process."""

from __future__ import annotations

from functools import cache
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from .view_models import LATENESS_MINUTES

STATIC = "/static"  # where the app serves streamdelay/web/static/


@cache
def environment() -> Environment:
    """The template environment (HTML autoescaped; an undefined name is an error)."""
    return Environment(loader=PackageLoader("streamdelay.web.dashboard", "templates"),
                       autoescape=select_autoescape(default=True, default_for_string=True),
                       undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)


# the names every page's base template reads, with their defaults
PAGE_DEFAULTS: dict[str, Any] = {"static": STATIC, "queues": [], "queue": None, "user": None,
                                 "csrf_field": "_csrf_token", "csrf_token": "", "done": None,
                                 "minutes": LATENESS_MINUTES,
                                 "can": frozenset(), "relations": ()}


def render(name: str, **context: Any) -> str:
    """Render template ``name`` with ``context`` over ``PAGE_DEFAULTS``."""
    return environment().get_template(name).render({**PAGE_DEFAULTS, **context})
