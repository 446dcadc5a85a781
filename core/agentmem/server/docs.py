"""The API documentation a browser opens: ``/docs`` (Swagger UI) and ``/openapi.json``.

Everything the page loads comes from this server: Swagger UI's files are those of the
``swagger-ui-bundle-v2`` package (the ``server`` extra), served under ``/docs/assets/``, so the
page works offline and behind a firewall. A browser sends no ``Authorization`` header when it
opens a page, so the page and the OpenAPI document are public: they describe the routes, never
any data. Calling a route from the page ("Try it out") needs a key like every other request:
the page's Authorize button takes it (HTTP bearer) and adds it to each call it makes.

=============================  ==========================================================
route                          serves
=============================  ==========================================================
``GET /docs``                  the Swagger UI page
``GET /docs/assets/<file>``    its stylesheet, scripts and icon (nothing else of the package)
``GET /openapi.json``          the OpenAPI document the page renders
=============================  ==========================================================
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastapi import APIRouter
from fastapi.responses import FileResponse, HTMLResponse, Response

from ..distribution import pip_install
from .responses import json_response

#: Files of Swagger UI the page loads, with their media types: the only ones served.
SWAGGER_FILES = {
    "swagger-ui.css": "text/css; charset=utf-8",
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "favicon-32x32.png": "image/png",
}
#: The page's own script (Swagger UI's stock initializer points at a demo API on the web).
INIT_SCRIPT = "agentmem-docs.js"
_INIT = """window.addEventListener("load", function () {
  window.ui = SwaggerUIBundle({
    url: "/openapi.json",
    dom_id: "#swagger-ui",
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    deepLinking: true,
    validatorUrl: null
  });
});
"""
_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>agentmem API</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
<link rel="icon" type="image/png" href="/docs/assets/favicon-32x32.png">
</head>
<body>
<noscript>The API documentation needs JavaScript; the OpenAPI document is at
<a href="/openapi.json">/openapi.json</a>.</noscript>
<div id="swagger-ui"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/assets/agentmem-docs.js"></script>
</body>
</html>
"""
#: Nothing on the page may come from elsewhere (Swagger UI inlines its styles and images).
_POLICY = (
    "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
    "script-src 'self'; connect-src 'self'"
)
_CACHE = "public, max-age=86400"


def swagger_dir() -> Path | None:
    """Where the installed Swagger UI files are (None without the package)."""
    try:
        from swagger_ui_bundle import swagger_ui_path
    except ImportError:
        return None
    return Path(str(swagger_ui_path))


def docs_router(openapi: Callable[[], dict[str, Any]]) -> APIRouter:
    """The documentation routes; ``openapi()`` builds the document (``app.openapi``)."""
    router = APIRouter(include_in_schema=False)
    files = swagger_dir()

    @router.get("/openapi.json")
    async def openapi_document() -> Response:
        return json_response(openapi())

    @router.get("/docs")
    async def docs_page() -> Response:
        if files is None:
            return Response(
                "The API documentation needs Swagger UI's files: "
                f"{pip_install('server')} (the swagger-ui-bundle-v2 package). The OpenAPI "
                "document is at /openapi.json.",
                status_code=503,
                media_type="text/plain",
            )
        return HTMLResponse(_PAGE, headers={"Content-Security-Policy": _POLICY})

    @router.get("/docs/assets/{name}")
    async def docs_asset(name: str) -> Response:
        if name == INIT_SCRIPT:
            return Response(_INIT, media_type="text/javascript", headers={"Cache-Control": _CACHE})
        if files is None or name not in SWAGGER_FILES:
            return Response("not found", status_code=404, media_type="text/plain")
        return FileResponse(
            files / name, media_type=SWAGGER_FILES[name], headers={"Cache-Control": _CACHE}
        )

    return router


__all__ = ["INIT_SCRIPT", "SWAGGER_FILES", "docs_router", "swagger_dir"]
