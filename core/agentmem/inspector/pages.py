"""The pages that only read (``GET``): nothing here changes the store, not even an access
count (search explains a recall, it does not make one).

=================================  ==========================================================
page                               shows
=================================  ==========================================================
``GET /ui``                        tenants, health (index lag, degraded state, jobs, disk)
                                   and plots of recent recalls
``GET /ui/tenants/<tenant>``       users, agents, tiers and sessions, with counts and times
``GET /ui/rows?tenant=...``        a page of rows (filters: user_id, agent_id, session_id,
                                   kind, scope, tier, partition; ``retired=1``)
``GET /ui/state?tenant=...``       agents' state, key by key (``agent`` for one agent)
``GET /ui/memories/<id>``          one row: content, metadata, sources, supersession history,
                                   audit, access count
``GET /ui/search?q=...``           recall's result with why each candidate scored what it did
                                   (``tenant``, ``user``, ``agent``, ``session`` where no key
                                   fixes them; recall's options by name, ``filters`` as
                                   a JSON object)
=================================  ==========================================================
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse, Response

from ..errors import ValidationError
from ..maintenance import browse
from ..maintenance.health import health
from ..models import CUT_REASONS, KINDS, MEMORY_TYPES, RECALL_SCOPES, TIERS
from ..recall.explain import recall_explain
from ..storage.browse import ROW_FILTERS
from .plots import latency_plot, score_plot
from .render import STATIC, Ui, guarded

#: Recall's options the search form offers, with how a query-string value is read.
INT_OPTIONS = ("top_k", "token_budget")
FLOAT_OPTIONS = ("min_score",)
LIST_OPTIONS = ("kinds", "memory_types", "tiers")
STYLE = (STATIC / "style.css").read_bytes()


def _one(request: Request, name: str) -> str | None:
    value = request.query_params.get(name)
    return value.strip() or None if value is not None else None


def search_options(request: Request) -> dict[str, Any]:
    """Recall's options from the query string (absent or empty: recall's default)."""
    options: dict[str, Any] = {}
    for name in INT_OPTIONS:
        raw = _one(request, name)
        if raw is not None:
            try:
                options[name] = int(raw)
            except ValueError:
                raise ValidationError(name, f"must be a whole number, got {raw!r}") from None
    for name in FLOAT_OPTIONS:
        raw = _one(request, name)
        if raw is not None:
            try:
                options[name] = float(raw)
            except ValueError:
                raise ValidationError(name, f"must be a number, got {raw!r}") from None
    for name in LIST_OPTIONS:
        values = [x for x in request.query_params.getlist(name) if x]
        if values:
            options[name] = values
    scope = _one(request, "scope")
    if scope is not None:
        options["scope"] = scope
    options["rerank"] = _one(request, "rerank") != "no"
    options["include_superseded"] = _one(request, "include_superseded") == "yes"
    target = _one(request, "target_agent")
    if target is not None:
        options["target_agent"] = target
    raw = _one(request, "filters")
    if raw is not None:
        try:
            options["filters"] = json.loads(raw)
        except ValueError:
            raise ValidationError("filters", f"must be a JSON object, got {raw!r}") from None
    return options


class Pages:
    """The GET pages (see the module docstring)."""

    def __init__(self, ui: Ui) -> None:
        self.ui = ui

    @property
    def ctx(self) -> Any:
        return self.ui.store.context

    def style(self) -> Response:
        return Response(STYLE, media_type="text/css", headers={"Cache-Control": "max-age=3600"})

    @guarded
    def start(self, request: Request) -> HTMLResponse:
        viewer = self.ui.viewer(request)
        ctx = self.ctx
        tenants = browse.tenants(ctx, viewer)
        # as the API answers: the store's health to its owner and an operator key, the
        # tenant's to its admin key
        store_wide = viewer.tenant_id is None or viewer.operator
        state = None
        if store_wide or viewer.admin:
            state = health(ctx, tenant_id=None if store_wide else viewer.tenant_id)
        # a pinned key sees its own identity's recalls, not when its tenant's others recall
        observed = ctx.recalls.recent(
            tenant_id=None if store_wide else viewer.tenant_id,
            user_id=viewer.user_id,
            agent_id=viewer.agent_id,
        )
        jobs = self.ui.jobs() if self.ui.jobs is not None and store_wide else None
        return self.ui.page(
            request,
            "start.html",
            viewer,
            tenants=tenants,
            health=state,
            jobs=jobs,
            latency=latency_plot(observed),
            scores=score_plot(observed, ctx.settings.memory.min_score),
            home=str(ctx.home) if viewer.tenant_id is None else None,
        )

    @guarded
    def tenant(self, request: Request, tenant: str) -> HTMLResponse:
        viewer = self.ui.viewer(request)
        overview = browse.overview(self.ctx, viewer, tenant)
        return self.ui.page(request, "tenant.html", viewer, overview=overview)

    @guarded
    def rows(self, request: Request) -> HTMLResponse:
        viewer = self.ui.viewer(request)
        tenant = viewer.identity(_one(request, "tenant")).tenant_id
        filters = {name: _one(request, name) for name in ROW_FILTERS}
        retired = _one(request, "retired") == "1"
        try:
            page = max(int(_one(request, "page") or 0), 0)
        except ValueError:
            raise ValidationError("page", "must be a whole number") from None
        found = browse.rows(self.ctx, viewer, tenant, filters, page=page, live_only=not retired)
        return self.ui.page(
            request,
            "rows.html",
            viewer,
            tenant=tenant,
            filters={k: v for k, v in filters.items() if v is not None},
            retired=retired,
            page=page,
            rows=found,
            more=len(found) == browse.PAGE,
        )

    @guarded
    def state(self, request: Request) -> HTMLResponse:
        viewer = self.ui.viewer(request)
        tenant = viewer.identity(_one(request, "tenant")).tenant_id
        agent = _one(request, "agent")
        entries = browse.agent_state(self.ctx, viewer, tenant, agent)
        return self.ui.page(
            request, "state.html", viewer, tenant=tenant, agent=agent, entries=entries
        )

    @guarded
    def memory(self, request: Request, memory_id: str) -> HTMLResponse:
        viewer = self.ui.viewer(request)
        detail = browse.row_detail(self.ctx, viewer, memory_id)
        return self.ui.page(request, "memory.html", viewer, detail=detail)

    @guarded
    def search(self, request: Request) -> HTMLResponse:
        viewer = self.ui.viewer(request)
        query = request.query_params.get("q", "")
        asked = {name: _one(request, name) for name in ("tenant", "user", "agent", "session")}
        explanation = None
        if query.strip():
            i = viewer.identity(
                self._tenant_for(viewer, asked["tenant"]),
                asked["user"],
                asked["agent"],
                asked["session"],
            )
            explanation = recall_explain(self.ctx, i, query, **search_options(request))
        return self.ui.page(
            request,
            "search.html",
            viewer,
            query=query,
            asked=asked,
            params=request.query_params,
            explanation=explanation,
            tenants=[t.key for t in browse.tenants(self.ctx, viewer)],
            choices={
                "scope": RECALL_SCOPES,
                "kinds": KINDS,
                "memory_types": MEMORY_TYPES,
                "tiers": TIERS,
            },
            defaults=self.ctx.settings.memory,
            cut_reasons=CUT_REASONS,
        )

    def _tenant_for(self, viewer: browse.Viewer, asked: str | None) -> str | None:
        """The tenant a search runs for: the one asked, else the viewer's, else the only one
        the store has."""
        if asked is not None or viewer.tenant_id is not None:
            return asked
        found = browse.tenants(self.ctx, viewer)
        return found[0].key if len(found) == 1 else None
