"""The session explorer at `/ui`: a page, its stylesheet and its modules, read from `app/ui/`.

The page holds no data: it calls the API from the browser with the key the user gives it, so
it sees exactly what that key may see. Anyone may load the page itself. Its assets are served
by the app (no CDN, no build step), and a content security policy lets it load nothing else.
"""

from pathlib import Path

from fastapi import APIRouter, Response
from fastapi.responses import RedirectResponse

from app.api.deps import PUBLIC
from app.errors import NotFound

UI = Path(__file__).parents[1] / "ui"
JS = "text/javascript; charset=utf-8"
# The page's stylesheet and its ES modules (explorer.js imports the others): nothing else.
ASSETS = {
    "explorer.css": "text/css; charset=utf-8",
    "explorer.js": JS,
    "dom.js": JS,
    "api.js": JS,
    "session.js": JS,
    "timeline.js": JS,
    "events.js": JS,
    "context.js": JS,
    "artifacts.js": JS,
    "lineage.js": JS,
    "actions.js": JS,
}
# Images may come from blob: URLs too: an artifact's preview, its bytes fetched with the key
# (an <img> decodes pixels only; nothing uploaded is ever run as a page or script).
HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data: blob:; "
    "frame-ancestors 'none'",
    "Cache-Control": "no-cache",
}

router = APIRouter(dependencies=[PUBLIC], include_in_schema=False)


@router.get("/")
@router.get("/ui/")
async def to_explorer() -> Response:
    """A browser pointed at the server, or at `/ui/`, finds the explorer (as `adk web` sends
    `/` to its UI)."""
    return RedirectResponse("/ui")


@router.get("/ui")
async def explorer() -> Response:
    page = (UI / "index.html").read_bytes()
    return Response(page, media_type="text/html; charset=utf-8", headers=HEADERS)


@router.get("/ui/{asset}")
async def explorer_asset(asset: str) -> Response:
    if asset not in ASSETS:
        raise NotFound(f"The explorer has no file {asset!r}.")
    return Response((UI / asset).read_bytes(), media_type=ASSETS[asset], headers=HEADERS)
