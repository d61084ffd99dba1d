"""What the Web UI's pages share: who is asking (a login session, or a key header), the form token
that stops another site from posting as the user, the templates, the download names, and the charts
(inline SVG, so the pages need no script or asset from elsewhere).

Logging in trades the API key for an opaque session id (sessions.py); the browser keeps only that,
in an HttpOnly, SameSite=Strict cookie scoped to /ui, and, when the service is reached over TLS
(`create_app(behind_https=True)`, an https request, or a proxy's `X-Forwarded-Proto: https`), a
`Secure` cookie named `__Host-...` (which browsers pin to this host and path /).

Cookies are not tied to a port: a page on another port of 127.0.0.1 can plant a session cookie of
its own (one its author got by logging in with their key), and the browser would then act in that
account (issue 42). So a session is also bound to the browser that opened it: the login form sends a
random value that the page's script keeps in `localStorage`, which is per origin, port included, and
which no other origin can read or write. Every form a session posts carries it back (`bound`), and a
page shows the session's binding hash so the script can leave a session this browser did not open.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from fastapi import Request, Response
from fastapi.templating import Jinja2Templates
from markupsafe import Markup, escape

from ..errors import AuthError
from .auth import Tenant
from .deps import presented_key
from .sessions import COOKIE, SECURE_COOKIE, Session, Sessions

UI_PREFIX = "/ui"
HERE = Path(__file__).resolve().parent
# Control characters that are not whitespace, as the CLI shows them (cli/render.py): \xNN. A browser
# drops NUL from a page and shows ESC, DEL or the C1 controls as nothing at all.
_HIDDEN = re.compile(r"[\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f]")


def visible(value: Any) -> Any:
    """What a page shows of a value: a string with its hidden control characters as \\xNN (HTML
    escaping follows, as always); markup the UI made itself, and anything not a string, as it is."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return _HIDDEN.sub(lambda m: f"\\x{ord(m.group()):02x}", value)
    return value


def from_form(text: str) -> str:
    """A textarea's value as it was shown: browsers send every line break as CRLF."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


templates = Jinja2Templates(directory=str(HERE / "templates"))
templates.env.finalize = visible  # every {{ value }} of every page (set before any template compiles)


class LoginRequired(Exception):
    """No live session and no valid key on a service that has keys: the page sends the browser to log in."""


def _secret(request: Request) -> bytes:
    state = request.app.state
    if not hasattr(state, "ui_secret"):
        state.ui_secret = secrets.token_bytes(32)  # per process, like the sessions it signs for
    return state.ui_secret


def sessions(request: Request) -> Sessions:
    """The service's session table (made by `ui.mount`)."""
    return request.app.state.ui_sessions


def over_tls(request: Request) -> bool:
    """Whether the browser reached us over https: the operator says so, or the request does."""
    if getattr(request.app.state, "behind_https", False) or request.url.scheme == "https":
        return True
    return request.headers.get("x-forwarded-proto", "").split(",")[0].strip().lower() == "https"


def cookie_name(request: Request) -> str:
    return SECURE_COOKIE if over_tls(request) else COOKIE


def session_id(request: Request) -> str | None:
    return request.cookies.get(cookie_name(request)) or None


def live_session(request: Request) -> Session | None:
    """The browser's session while it lives and the key that opened it is still in force (a reload
    ends such sessions too, key_reload; checked here as well, for a login that raced the reload)."""
    session = sessions(request).get(session_id(request))
    keys = request.app.state.keys
    if session is not None and not keys.is_open and session.key not in keys.fingerprints:
        sessions(request).revoke(session_id(request))
        return None
    return session


def set_session_cookie(response: Response, request: Request, sid: str) -> None:
    """The session id in a cookie scripts cannot read and other sites cannot make the browser send."""
    tls = over_tls(request)
    response.set_cookie(cookie_name(request), sid, max_age=int(sessions(request).lifetime_s), httponly=True,
                        samesite="strict", secure=tls, path="/" if tls else UI_PREFIX)


def clear_session_cookie(response: Response, request: Request) -> None:
    tls = over_tls(request)
    response.delete_cookie(cookie_name(request), path="/" if tls else UI_PREFIX, secure=tls, httponly=True,
                           samesite="strict")


def ui_tenant(request: Request) -> Tenant:
    """The caller's tenant from its session (or a key header); LoginRequired when there is none."""
    session = live_session(request)
    if session is not None:
        tenant = session.tenant
    else:
        try:
            tenant = request.app.state.keys.resolve(presented_key(request))
        except AuthError:
            raise LoginRequired() from None
    request.state.tenant = tenant
    return tenant


MAX_BINDING = 200  # the script sends 48 hex characters; anything longer is no binding


def binding_hash(value: str) -> str:
    """What a session keeps of its browser's binding value: its SHA-256, or "" for none."""
    if not value or len(value) > MAX_BINDING:
        return ""
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


def bound(request: Request, value: str) -> bool:
    """Whether a form came from the browser that opened its session. A key header or a service
    without keys has no cookie to plant, so no binding; a session opened without one never writes."""
    session = live_session(request)
    if session is None:
        return True
    return bool(session.binding) and hmac.compare_digest(binding_hash(value), session.binding)


def page_binding(request: Request) -> str:
    """The binding hash a page shows its script ("none" for a session without one), "" without a session."""
    session = live_session(request) if getattr(request.state, "tenant", None) is not None else None
    return "" if session is None else (session.binding or "none")


def csrf_token(request: Request) -> str:
    """The token every form carries: bound to the live session id (or to the key header, or to
    "open" on a service without keys), unknown to other sites."""
    session, key = session_id(request), presented_key(request)
    if session and live_session(request) is not None:
        basis = "session:" + session
    elif key:
        basis = "key:" + hashlib.sha256(key.encode("utf-8")).hexdigest()
    else:
        basis = "open"
    return hmac.new(_secret(request), basis.encode("utf-8"), hashlib.sha256).hexdigest()[:40]


def same_origin(request: Request) -> bool:
    """A browser's POST from another site carries its Origin; ours carries this host (or none)."""
    origin = request.headers.get("origin")
    if not origin or origin == "null":
        return origin is None
    return urlsplit(origin).netloc == request.headers.get("host", "")


def form_ok(request: Request, token: str) -> bool:
    return same_origin(request) and hmac.compare_digest(token or "", csrf_token(request))


_ATTR_CHARS = "!#$&+-.^_`|~"  # RFC 5987 attr-char besides letters and digits: left as they are


def attachment(filename: str) -> str:
    """A Content-Disposition for a download, per RFC 6266: `filename=` an ASCII fallback (quotes,
    backslashes, percent signs, slashes, controls and non-ASCII replaced by "_"), then `filename*=`
    the exact name, UTF-8 and percent-encoded."""
    fallback = "".join(c if " " <= c <= "~" and c not in '"\\%/' else "_" for c in filename)
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(filename, safe=_ATTR_CHARS)}"


def when(ts: int | None) -> str:
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
    """Vertical columns (a histogram, a time series), the first and last labels under the axis (one
    label, centred, when there is one column: a lone day once showed its date at both ends)."""
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
    if len(labels) == 1 or (labels and labels[0] == labels[-1]):  # one column: its label once, under it
        ends = f'<text x="{5 + step * len(values) / 2:.1f}" y="{height - 5}" class="lbl" text-anchor="middle">{escape(labels[0])}</text>'
    elif labels:
        ends = (f'<text x="5" y="{height - 5}" class="lbl">{escape(labels[0])}</text>'
                f'<text x="{width - 5}" y="{height - 5}" class="lbl" text-anchor="end">{escape(labels[-1])}</text>')
    return Markup(f'<svg role="img" aria-label="{escape(label)}" viewBox="0 0 {width} {height}" width="{width}" '
                  f'height="{height}" class="chart"><title>{escape(label)}</title>{"".join(cols)}{ends}</svg>')
