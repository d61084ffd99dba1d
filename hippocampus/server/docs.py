"""The API reference pages, served from the wheel: Swagger UI's and ReDoc's scripts and stylesheet
come from the `fastapi-offline` package (MIT; Swagger UI 5, which reads OpenAPI 3.1, and ReDoc 2),
mounted at /docs/static, never from a CDN or Google Fonts, so /docs and /redoc work on a machine
without internet.

The pages and /openapi.json are key-gated like /v1 when keys are set (guard.py `DOCS_PATHS`); the
static assets are public (they are the tools' own files and say nothing of this service)."""

from __future__ import annotations

from pathlib import Path

import fastapi_offline
from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

ASSETS = Path(fastapi_offline.__file__).parent / "static"
STATIC = "/docs/static"
OAUTH2_REDIRECT = "/docs/oauth2-redirect"
# Nothing but this service: ReDoc's footer logo (cdn.redoc.ly) and any other outside fetch are never
# tried. Both tools run an inline start script and inline styles; ReDoc searches in a blob: worker.
CSP = ("default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
       "font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; frame-ancestors 'none'; base-uri 'none'; "
       "object-src 'none'")


def _own(page: HTMLResponse) -> HTMLResponse:
    page.headers["Content-Security-Policy"] = CSP
    return page


def mount_docs(app: FastAPI) -> None:
    """/docs, /redoc and /docs/oauth2-redirect on the bundled assets; create the app with
    docs_url=None and redoc_url=None so that FastAPI's CDN pages are not added as well."""
    app.mount(STATIC, StaticFiles(directory=ASSETS), name="docs-static")
    schema = app.openapi_url or "/openapi.json"
    title = f"{app.title} - API reference"

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        return _own(get_swagger_ui_html(openapi_url=schema, title=title, swagger_js_url=f"{STATIC}/swagger-ui-bundle.js",
                                   swagger_css_url=f"{STATIC}/swagger-ui.css", swagger_favicon_url=f"{STATIC}/favicon.png",
                                   oauth2_redirect_url=OAUTH2_REDIRECT))

    @app.get("/redoc", include_in_schema=False)
    def redoc() -> HTMLResponse:
        return _own(get_redoc_html(openapi_url=schema, title=title, redoc_js_url=f"{STATIC}/redoc.standalone.js",
                                   redoc_favicon_url=f"{STATIC}/favicon.png", with_google_fonts=False))

    @app.get(OAUTH2_REDIRECT, include_in_schema=False)
    def oauth2_redirect() -> HTMLResponse:
        return _own(get_swagger_ui_oauth2_redirect_html())
