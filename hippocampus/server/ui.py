"""The Web UI under /ui: see, search, edit, curate and undo one user's memories in a browser.

Server-rendered pages (Jinja2, templates/) over the same Memory and the same keys and tenant rules
as the REST API: every page and form names a user, and a key may only name its own users (anyone
else is "not found", as a missing memory is). Every change is a facade call; the UI adds no rule of
its own. Logging in trades the key for a server-side session (ui_support, sessions.py): the browser
never holds the key, and logging out ends the session here. Forms carry a token bound to the
session, and a POST from another origin is refused (logout included). A session's forms also
carry the binding of the browser that logged in (ui_support.bound), so a session cookie planted by
a page on another loopback port cannot write.
"""

from __future__ import annotations

import math
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, FastAPI, Form, Request
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles

from .. import validation as V
from ..errors import AuthError, InvalidInput, NotFound
from ..lifecycle.categories import category_names
from ..memory import Memory
from ..memory.browse import SORT_KEYS
from ..models import MemoryType, State, now_ts
from .rest import without_paths
from .sessions import DEFAULT_LIFETIME_S, Sessions
from .ui_support import (
    HERE,
    UI_PREFIX,
    LoginRequired,
    attachment,
    bar_chart,
    binding_hash,
    bound,
    clear_session_cookie,
    column_chart,
    csrf_token,
    form_ok,
    from_form,
    live_session,
    page_binding,
    query,
    same_origin,
    session_id,
    sessions,
    set_session_cookie,
    templates,
    ui_tenant,
    visible,
    when,
)

router = APIRouter(prefix=UI_PREFIX, include_in_schema=False)
PAGE = 25
UNDOABLE = {"created", "updated", "reconsolidated", "separated", "deleted", "forgotten", "merged", "archived",
            "promoted", "superseded", "compressed"}
FILTERS = ("memory_type", "category", "state", "chat_id", "agent_id", "text", "sort", "order")


def _page(request: Request, name: str, status: int = 200, **ctx: Any) -> HTMLResponse:
    tenant = getattr(request.state, "tenant", None)
    return templates.TemplateResponse(request, name, {
        "csrf": csrf_token(request), "binding": page_binding(request), "tenant": tenant, "keys_open": request.app.state.keys.is_open, "when": when,
        "query": query, "prefix": UI_PREFIX, **ctx}, status_code=status)


def _memory(request: Request, user_id: str) -> Memory:
    """The tenant check first: another tenant's user is "not found", whatever the page."""
    ui_tenant(request).check(user_id, f"user {user_id!r} not found")
    return request.app.state.memory


def _posted(request: Request, user_id: str, csrf: str, bind: str) -> Memory:
    memory = _memory(request, user_id)
    if not form_ok(request, csrf):
        raise InvalidInput("this form is stale or came from another site; reload the page and try again")
    if not bound(request, bind):
        raise InvalidInput("this browser did not open this session (a page on another port of this machine "
                           "may have set its cookie); log in again")
    return memory


def _to(path: str, **params: Any) -> RedirectResponse:
    qs = query({}, **params)
    return RedirectResponse(f"{UI_PREFIX}{path}{'?' + qs if qs else ''}", status_code=303)


def _user(user_id: str) -> str:
    """A user's pages, the id quoted ("?", "#" or "%" in a user id once cut the redirect short)."""
    return f"/users/{quote(user_id, safe='')}"


# ---------------------------------------------------------------------- login and home
@router.get("/login", response_class=HTMLResponse)
def login_form(request: Request, failed: bool = False, foreign: bool = False) -> Response:
    if request.app.state.keys.is_open:
        return _to("")
    hours = sessions(request).lifetime_s / 3600
    lifetime = f"{hours:g} hours" if hours >= 1 else f"{sessions(request).lifetime_s / 60:g} minutes"
    return _page(request, "login.html", failed=failed, foreign=foreign, lifetime=lifetime)


@router.post("/login")
def login(request: Request, key: str = Form(""), bind: str = Form("")) -> Response:
    """A valid key opens a session at once; a wrong one is counted by the service's failed-auth
    throttle, and an address that failed too often is answered 429 (Retry-After) for wrong keys."""
    if not same_origin(request):
        raise InvalidInput("a login from another site is refused")
    keys = request.app.state.keys
    if keys.is_open:
        return _to("")
    throttle = getattr(request.app.state, "auth_throttle", None)
    client = request.client.host if request.client else "unknown"
    try:  # the key first: a right key is never delayed, as on /v1 and /mcp (guard.AuthThrottle)
        tenant, fingerprint = keys.identify(key.strip())
    except AuthError:  # the same page again, without saying why beyond "not accepted"
        wait = throttle.retry_after(client) if throttle is not None else None
        if wait:
            response = _page(request, "error.html", status=429, kind="TooManyAttempts", code=429,
                             message=f"too many wrong keys from this address; try again in {math.ceil(wait)} s")
            response.headers["Retry-After"] = str(max(1, math.ceil(wait)))
            return response
        if throttle is not None:
            throttle.failure(client)
        return _to("/login", failed="1")
    sessions(request).revoke(session_id(request))  # a new login replaces the browser's old session
    response = _to("")
    set_session_cookie(response, request, sessions(request).open(tenant, binding_hash(bind), fingerprint))
    return response


@router.post("/logout")
def logout(request: Request, csrf: str = Form("")) -> Response:
    """End the session on the server. Only from our own pages: another site's POST changes nothing.
    No browser binding is asked: leaving a session another page planted must always work."""
    if not same_origin(request):
        raise InvalidInput("a logout from another site is refused")
    if live_session(request) is not None:
        if not form_ok(request, csrf):
            raise InvalidInput("this form is stale or came from another site; reload the page and try again")
        sessions(request).revoke(session_id(request))
    response = _to("/login")
    clear_session_cookie(response, request)
    return response


@router.get("", response_class=HTMLResponse)
def home(request: Request) -> Response:
    tenant = ui_tenant(request)
    users = sorted(tenant.users) if tenant.users is not None else []
    return _page(request, "home.html", users=users)


@router.get("/open")
def open_user(request: Request, user_id: str = "") -> Response:
    user_id = V.check_id("user_id", user_id)
    if "/" in user_id:  # the server reads %2F in a path as "/": such a user's pages cannot be addressed
        raise InvalidInput(f"user id {user_id!r} contains '/', which the Web UI cannot show; use the REST API, MCP or the CLI")
    _memory(request, user_id)
    return _to(f"{_user(user_id)}/memories")


# ---------------------------------------------------------------------- browse, add, batch delete
def _filters(params: dict[str, Any]) -> dict[str, Any]:
    sort = params.get("sort") or "time"
    return {"memory_type": params.get("memory_type") or None, "category": params.get("category") or None,
            "state": params.get("state") or None, "chat_id": params.get("chat_id") or None,
            "text": params.get("text") or None, "sort": sort if sort in SORT_KEYS else "time",
            "descending": params.get("order", "desc") != "asc",
            "filters": {"agent_id": params["agent_id"]} if params.get("agent_id") else None}  # one agent's (docs/agents.md)


@router.get("/users/{user_id}/memories", response_class=HTMLResponse)
def memories(request: Request, user_id: str, offset: int = 0) -> Response:
    memory = _memory(request, user_id)
    params = {k: request.query_params.get(k, "") for k in FILTERS}
    page = memory.browse(user_id, **_filters(params), offset=offset, limit=PAGE)
    now = now_ts()
    scores = {r.id: memory.score_now(r, now) for r in page.items}
    return _page(request, "memories.html", user_id=user_id, page=page, params=params, scores=scores,
                 categories=category_names(memory.config.categories), types=[t.value for t in MemoryType], sorts=SORT_KEYS,
                 msg=request.query_params.get("msg", ""))


@router.post("/users/{user_id}/memories")
def add(request: Request, user_id: str, text: str = Form(...), memory_type: str = Form("episodic"),
        category: str = Form(""), csrf: str = Form(""), bind: str = Form("")) -> Response:
    memory = _posted(request, user_id, csrf, bind)
    if category and category not in category_names(memory.config.categories):
        raise InvalidInput(f"unknown category {category!r}")
    mid = memory.add(from_form(text), user_id=user_id, chat_id="ui", who=user_id, memory_type=memory_type).ids[0]
    if category:
        memory.curate(mid, user_id, category=category)
    return _to(f"{_user(user_id)}/memories/{mid}", msg="added")


@router.post("/users/{user_id}/batch-delete", response_class=HTMLResponse)
def batch_delete(request: Request, user_id: str, ids: str = Form(""), csrf: str = Form(""), bind: str = Form("")) -> Response:
    memory = _posted(request, user_id, csrf, bind)
    result = memory.delete_many(ids, user_id)
    return _page(request, "batch.html", user_id=user_id, result=result)


# ---------------------------------------------------------------------- one memory
@router.get("/users/{user_id}/memories/{memory_id}", response_class=HTMLResponse)
def detail(request: Request, user_id: str, memory_id: int) -> Response:
    memory = _memory(request, user_id)
    try:
        record = memory.get(memory_id, user_id)
    except NotFound:
        record = None  # deleted, forgotten or merged away: its history (and its undo) remain
    events = memory.history(memory_id, user_id)  # NotFound when it never existed for this user
    undone = {e.details.get("undo_of") for e in events if e.details.get("undo_of") is not None}
    return _page(request, "memory.html", user_id=user_id, memory_id=memory_id, record=record, events=list(reversed(events)),
                 undoable=UNDOABLE, undone=undone, categories=category_names(memory.config.categories),
                 score=memory.score_now(record, now_ts()) if record else None, msg=request.query_params.get("msg", ""))


@router.post("/users/{user_id}/memories/{memory_id}/edit")
def edit(request: Request, user_id: str, memory_id: int, text: str = Form(...), category: str = Form(""),
         importance: str = Form(""), csrf: str = Form(""), bind: str = Form("")) -> Response:
    memory = _posted(request, user_id, csrf, bind)
    record = memory.get(memory_id, user_id)
    try:
        level: float | None = float(importance) if importance.strip() else None
    except ValueError:
        raise InvalidInput(f"importance must be a number between 0 and 1, got {importance!r}") from None
    if level is not None and abs(level - record.life.importance) < 1e-9:
        level = None
    new_category = category if category and category != record.life.category.value else None
    text = from_form(text).strip()
    if text != from_form(visible(record.text)).strip():  # a form saved as it was shown changes no text
        memory.update(memory_id, text, user_id=user_id)
    if new_category is not None or level is not None:
        memory.curate(memory_id, user_id, category=new_category, importance=level)
    return _to(f"{_user(user_id)}/memories/{memory_id}", msg="saved")


@router.post("/users/{user_id}/memories/{memory_id}/delete")
def delete(request: Request, user_id: str, memory_id: int, csrf: str = Form(""), bind: str = Form("")) -> Response:
    memory = _posted(request, user_id, csrf, bind)
    memory.delete(memory_id, user_id)
    return _to(f"{_user(user_id)}/memories/{memory_id}", msg="deleted")


@router.post("/users/{user_id}/events/{event_id}/undo")
def undo(request: Request, user_id: str, event_id: int, memory_id: int = Form(...), csrf: str = Form(""), bind: str = Form("")) -> Response:
    memory = _posted(request, user_id, csrf, bind)
    result = memory.undo(event_id, user_id)
    target = result.memory_ids[0] if result.memory_ids else memory_id
    return _to(f"{_user(user_id)}/memories/{target}", msg="undone")


# ---------------------------------------------------------------------- search, statistics, export
@router.get("/users/{user_id}/search", response_class=HTMLResponse)
def search(request: Request, user_id: str, q: str = "", mode: str = "") -> Response:
    memory = _memory(request, user_id)
    result = memory.search(q, user_id, mode=mode or None) if q.strip() else None
    hits = sorted(result.all, key=lambda h: -h.score) if result else []
    return _page(request, "search.html", user_id=user_id, q=q, mode=mode, hits=hits)


@router.get("/users/{user_id}/stats", response_class=HTMLResponse)
def stats(request: Request, user_id: str) -> Response:
    memory = _memory(request, user_id)
    view = memory.overview(user_id)
    days = list(view.added_per_day.items())[-60:]
    operator = request.state.tenant.is_operator
    runs = [r if operator else without_paths(r, memory) for r in request.app.state.consolidations.runs
            if r.get("users") == [user_id] or operator]
    charts = {
        "type": bar_chart(view.by_type, "memories by type"),
        "category": bar_chart(view.by_category, "memories by category"),
        "state": bar_chart({**view.by_state, "superseded": view.superseded}, "memories by state"),
        "scores": column_chart(view.score_histogram, [f"{i / 10:.1f}-{(i + 1) / 10:.1f}" for i in range(len(view.score_histogram))],
                               "scores now, from 0 to 1"),
        "days": column_chart([n for _, n in days], [d for d, _ in days], "memories written per day"),
    }
    crossless = memory.stats(user_id).get("without_cross_vector")  # None: the store keeps no cross vectors
    return _page(request, "stats.html", user_id=user_id, view=view, charts=charts, runs=list(reversed(runs)),
                 states=[s.value for s in State], crossless=crossless)


@router.post("/users/{user_id}/consolidate")
def consolidate(request: Request, user_id: str, csrf: str = Form(""), bind: str = Form("")) -> JSONResponse:
    _posted(request, user_id, csrf, bind)
    return JSONResponse({"run_id": request.app.state.consolidations.start([user_id], trigger="ui")})


@router.get("/users/{user_id}/consolidate/{run_id}")
def consolidation_progress(request: Request, user_id: str, run_id: str) -> JSONResponse:
    memory = _memory(request, user_id)
    state = request.app.state.consolidations.tracked(run_id)
    if state is None or state["users"] != [user_id]:
        raise NotFound(f"no consolidation run {run_id!r} for this user")
    return JSONResponse(state if request.state.tenant.is_operator else without_paths(state, memory))


@router.get("/users/{user_id}/export")
def export(request: Request, user_id: str, format: str = "jsonl") -> Response:
    memory = _memory(request, user_id)
    params = {k: request.query_params.get(k, "") for k in FILTERS}
    fmt = "md" if format == "md" else "jsonl"
    body = memory.export_view(user_id, fmt, **_filters(params))
    name = f"{user_id}-memories.{'md' if fmt == 'md' else 'jsonl'}"
    return PlainTextResponse(body, media_type="text/markdown" if fmt == "md" else "application/x-ndjson",
                             headers={"Content-Disposition": attachment(name)})


def error_page(request: Request, status: int, kind: str, message: str) -> HTMLResponse:
    """A library error on a page: the same words as the API, as a page a person can go back from."""
    return _page(request, "error.html", status=status, kind=kind, message=message, code=status)


def mount(app: FastAPI) -> None:
    """The UI's routes, its static files and the login redirect, on the service's app."""
    app.state.ui_sessions = Sessions(getattr(app.state, "ui_session_s", DEFAULT_LIFETIME_S))
    app.include_router(router)
    app.mount(f"{UI_PREFIX}/static", StaticFiles(directory=str(HERE / "static")), name="ui-static")

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon() -> Response:  # browsers ask for it on every page; a 404 there filled logs and consoles
        return FileResponse(HERE / "static" / "favicon.svg", media_type="image/svg+xml",
                            headers={"Cache-Control": "public, max-age=86400"})

    @app.exception_handler(LoginRequired)
    async def to_login(request: Request, exc: LoginRequired) -> Response:
        return RedirectResponse(f"{UI_PREFIX}/login", status_code=303)
