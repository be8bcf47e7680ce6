"""The dashboard at ``/`` (docs/dashboard.md): server-rendered pages (``pages.py``), forms and
actions with a confirm step (``forms.py``), view models (``view_models.py``), the lateness chart
(``chart.py``); templates in ``templates/``, script and style in ``web/static``.

``web.app.create_app`` includes ``dashboard_routes()``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

TEMPLATE_DIR = Path(__file__).parent / "templates"


def dashboard_routes() -> list[Any]:
    """The dashboard's routes: one router at ``/`` whose pages send a visitor without a
    session to ``/login`` and show errors as pages."""
    from litestar import Router
    from litestar.exceptions import (
        NotAuthorizedException,
        NotFoundException,
        PermissionDeniedException,
    )

    from . import batch_pages as workflows
    from . import finding, fleet_views, forms, pages

    handlers = [pages.overview, pages.queue_page, pages.topics_fragment, pages.jobs_page,
                pages.job_page, pages.job_fragment, pages.search, forms.login_page,
                forms.login, forms.logout, forms.confirm, forms.act,
                finding.find_page, finding.bulk_confirm, finding.bulk_act,
                pages.events_fragment, pages.totals_fragment, workflows.batch_page,
                workflows.batch_fragment,
                fleet_views.workers_page, fleet_views.worker_page]
    return [Router(path="/", route_handlers=handlers, include_in_schema=False,
                   exception_handlers={NotAuthorizedException: forms.to_login,
                                       PermissionDeniedException: forms.forbidden,
                                       NotFoundException: forms.not_found})]
