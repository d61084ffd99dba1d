"""What the Web UI's pages share: who is asking (the service's own keys, presented once on the login
page and kept in an HttpOnly cookie), the form token that stops another site from posting as the
user, the templates, and the charts (inline SVG, so the pages need no script or asset from elsewhere).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping, Optional
from urllib.parse import urlencode, urlsplit

from fastapi import Request
from fastapi.templating import Jinja2Templates
from markupsafe import Markup, escape

from ..errors import AuthError
from .auth import Tenant
from .deps import presented_key

UI_PREFIX = "/ui"
COOKIE = "hippocampus_ui_key"
HERE = Path(__file__).resolve().parent
templates = Jinja2Templates(directory=str(HERE / "templates"))


class LoginRequired(Exception):
    """No key, or an unknown one, on a service that has keys: the page sends the browser to log in."""


def _secret(request: Request) -> bytes:
    state = request.app.state
    if not hasattr(state, "ui_secret"):
        state.ui_secret = secrets.token_bytes(32)  # per process: a restart asks no one to log in again
    return state.ui_secret


def ui_tenant(request: Request) -> Tenant:
    """The caller's tenant from the UI cookie (or a key header); LoginRequired when there is none."""
    keys = request.app.state.keys
    key = request.cookies.get(COOKIE) or presented_key(request)
    try:
        tenant = keys.resolve(key)
    except AuthError:
        raise LoginRequired() from None
    request.state.tenant = tenant
    return tenant


def csrf_token(request: Request) -> str:
    """The token every form carries: bound to the key the browser presents, unknown to other sites."""
    key = request.cookies.get(COOKIE) or "open"
    return hmac.new(_secret(request), key.encode("utf-8"), hashlib.sha256).hexdigest()[:40]


def same_origin(request: Request) -> bool:
    """A browser's POST from another site carries its Origin; ours carries this host (or none)."""
    origin = request.headers.get("origin")
    if not origin or origin == "null":
        return origin is None
    return urlsplit(origin).netloc == request.headers.get("host", "")


def form_ok(request: Request, token: str) -> bool:
    return same_origin(request) and hmac.compare_digest(token or "", csrf_token(request))


def when(ts: Optional[int]) -> str:
    """Epoch seconds as "2026-11-25 09:30" (UTC)."""
    if ts is None:
        return ""
    return datetime.fromtimestamp(int(ts), tz=timezone.utc).strftime("%Y-%m-%d %H:%M")


def query(params: Mapping[str, Any], **changes: Any) -> str:
    """The current filters with some changed, as a query string (empty values dropped)."""
    merged = {**params, **changes}
    return urlencode({k: v for k, v in merged.items() if v not in (None, "")})


def bar_chart(data: Mapping[str, int], label: str, width: int = 520, bar: int = 18) -> Markup:
    """Horizontal bars, one per key, with the count at the end: an accessible inline SVG."""
    items = list(data.items())
    top = max((v for _, v in items), default=0) or 1
    height = bar * max(len(items), 1) + 8
    rows = []
    for i, (name, value) in enumerate(items):
        y = 4 + i * bar
        w = int((width - 200) * value / top)
        rows.append(f'<text x="0" y="{y + bar - 6}" class="lbl">{escape(name)}</text>'
                    f'<rect x="140" y="{y + 2}" width="{max(w, 1)}" height="{bar - 5}" class="bar"/>'
                    f'<text x="{146 + w}" y="{y + bar - 6}" class="val">{value}</text>')
    return Markup(f'<svg role="img" aria-label="{escape(label)}" viewBox="0 0 {width} {height}" width="{width}" '
                  f'height="{height}" class="chart"><title>{escape(label)}</title>{"".join(rows)}</svg>')


def column_chart(values: list[int], labels: list[str], label: str, width: int = 520, height: int = 140) -> Markup:
    """Vertical columns (a histogram, a time series), the first and last labels under the axis."""
    n = max(len(values), 1)
    top = max(values, default=0) or 1
    step = (width - 10) / n
    cols = []
    for i, value in enumerate(values):
        h = int((height - 30) * value / top)
        x = 5 + i * step
        tip = f"{labels[i] if i < len(labels) else i}: {value}"
        cols.append(f'<rect x="{x:.1f}" y="{height - 20 - h}" width="{max(step - 2, 1):.1f}" height="{max(h, 0)}" '
                    f'class="bar"><title>{escape(tip)}</title></rect>')
    ends = ""
    if labels:
        ends = (f'<text x="5" y="{height - 5}" class="lbl">{escape(labels[0])}</text>'
                f'<text x="{width - 5}" y="{height - 5}" class="lbl" text-anchor="end">{escape(labels[-1])}</text>')
    return Markup(f'<svg role="img" aria-label="{escape(label)}" viewBox="0 0 {width} {height}" width="{width}" '
                  f'height="{height}" class="chart"><title>{escape(label)}</title>{"".join(cols)}{ends}</svg>')
