"""Small HTTP helpers shared by the tests."""

from typing import Any

import httpx

APP = "agent-app"
USER = "alice"
SESSIONS = f"/apps/{APP}/users/{USER}/sessions"


def session_url(session_id: str, app: str = APP, user: str = USER) -> str:
    return f"/apps/{app}/users/{user}/sessions/{session_id}"


async def create_session(
    client: httpx.AsyncClient, app: str = APP, user: str = USER, **body: Any
) -> dict[str, Any]:
    response = await client.post(f"/apps/{app}/users/{user}/sessions", json=body)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


async def append(
    client: httpx.AsyncClient,
    session_id: str,
    event: dict[str, Any],
    *,
    app: str = APP,
    user: str = USER,
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    return await client.post(
        f"{session_url(session_id, app, user)}/events", json=event, headers=headers
    )


def delta_event(delta: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"author": "agent", "invocationId": "inv-1", "actions": {"stateDelta": delta}, **fields}


def assert_problem(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body: dict[str, Any] = response.json()
    assert body["status"] == status
    assert body["code"] == code
    assert body["detail"]
    return body
