"""The API's documentation at `/docs`: Swagger UI, with its assets served by this server rather
than a CDN, so that a server without internet access still shows it."""

from pathlib import Path

import fastapi_offline
from fastapi import APIRouter, Request, Response
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse

from app.api.deps import PUBLIC
from app.errors import NotFound

# Swagger UI's bundle and stylesheet (swagger-ui-dist 5, Apache-2.0) and FastAPI's icon, as
# the fastapi-offline package (MIT) ships them: its pin in requirements.lock pins them.
ASSETS_DIR = Path(fastapi_offline.__path__[0]) / "static"
ASSETS = {
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "favicon.png": "image/png",
}

router = APIRouter(dependencies=[PUBLIC], include_in_schema=False)


@router.get("/docs")
async def docs(request: Request) -> Response:
    root = request.scope.get("root_path", "").rstrip("/")
    return get_swagger_ui_html(
        openapi_url=f"{root}{request.app.openapi_url}",
        title=f"{request.app.title} - Swagger UI",
        swagger_js_url=f"{root}/docs/swagger-ui-bundle.js",
        swagger_css_url=f"{root}/docs/swagger-ui.css",
        swagger_favicon_url=f"{root}/docs/favicon.png",
    )


@router.get("/docs/{asset}")
async def docs_asset(asset: str) -> Response:
    if asset not in ASSETS:
        raise NotFound(f"The docs have no file {asset!r}.")
    return FileResponse(ASSETS_DIR / asset, media_type=ASSETS[asset])
