"""What every answer is: an error is problem+json (a refused CORS preflight too), a JSON answer
tells browsers not to sniff another type into it, and `/docs` needs nothing but this server."""

import re
from collections.abc import AsyncIterator

import httpx
import pytest
from playwright.async_api import Request, Route, async_playwright, expect

from app.config import Settings
from tests.fixtures import client_of
from tests.helpers import chromium, create_session, session_url

PAGE = "https://app.example.com"
EVENTS = session_url("s1") + "/events"


@pytest.fixture(scope="module")
async def cors_client(database_url: str) -> AsyncIterator[httpx.AsyncClient]:
    settings = Settings(database_url=database_url, auth=True, cors_origins=[PAGE])
    async with client_of(settings) as http:
        yield http


def assert_problem(answer: httpx.Response, status: int, code: str) -> None:
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    problem = answer.json()
    assert problem.keys() >= {"type", "title", "status", "detail", "code"}
    assert (problem["status"], problem["code"]) == (status, code)


@pytest.mark.parametrize(
    "refused",
    [
        {"Origin": "https://evil.example.com"},
        {"Access-Control-Request-Method": "PUT"},
        {"Access-Control-Request-Headers": "x-secret"},
    ],
    ids=["origin", "method", "header"],
)
async def test_a_refused_preflight_is_a_problem(
    cors_client: httpx.AsyncClient, refused: dict[str, str]
) -> None:
    preflight = {"Origin": PAGE, "Access-Control-Request-Method": "POST", **refused}
    answer = await cors_client.options(EVENTS, headers=preflight)
    assert_problem(answer, 400, "cors_preflight_refused")
    assert next(iter(refused.values())) in answer.json()["detail"]
    assert answer.headers["x-content-type-options"] == "nosniff"


async def test_every_answer_carries_nosniff_once(client: httpx.AsyncClient) -> None:
    await create_session(client, sessionId="s1")
    answers = [
        await client.get("/healthz"),
        await client.get("/openapi.json"),
        await client.post(EVENTS, json={"author": "user"}),  # the append's own lane
        await client.post(EVENTS, json={"author": 1}),  # 422
        await client.get(session_url("missing")),  # 404
        await client.get("/nowhere"),
        await client.get("/ui"),
        await client.get("/docs"),
    ]
    for answer in answers:
        assert answer.headers.get_list("x-content-type-options") == ["nosniff"], answer.url


async def test_the_docs_load_their_assets_from_this_server(client: httpx.AsyncClient) -> None:
    page = await client.get("/docs")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    urls = re.findall(r'(?:src|href)="([^"]*)"', page.text)
    assert len(urls) == 3 and all(url.startswith("/docs/") for url in urls), urls
    types = set()
    for url in urls:
        asset = await client.get(url)
        assert asset.status_code == 200 and asset.content, url
        types.add(asset.headers["content-type"].split(";")[0])
    assert types == {"text/javascript", "text/css", "image/png"}
    assert (await client.get("/docs/nothing.js")).status_code == 404
    assert (await client.get("/redoc")).status_code == 404  # it loaded its script from a CDN


async def test_the_docs_show_the_api_in_a_browser_that_reaches_only_this_server(
    live_server: str,
) -> None:
    executable = chromium()
    elsewhere: list[str] = []

    async def only_this_server(route: Route, request: Request) -> None:
        if request.url.startswith(live_server):
            await route.continue_()
        else:
            elsewhere.append(request.url)
            await route.abort()

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=executable, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            page = await browser.new_page()
            await page.route("**/*", only_this_server)
            await page.goto(f"{live_server}/docs")
            await expect(page.locator(".swagger-ui .info .title")).to_contain_text("Sessionary")
            await expect(page.locator(".opblock-summary-path").first).to_be_visible()
        finally:
            await browser.close()
    assert elsewhere == []
