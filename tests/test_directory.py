"""`GET /apps` and `GET /apps/{app}/users`: what there is to browse, paged by name, counting
live sessions only, and narrowed to what the caller's key may see."""

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest

from app.config import Settings
from tests.fixtures import client_of, keys_command


async def create(client: httpx.AsyncClient, app: str, user: str, **body: object) -> None:
    created = await client.post(f"/apps/{app}/users/{user}/sessions", json=body)
    assert created.status_code == 201, created.text


# The apps these tests make: other modules' servers may have left apps of their own.
OURS = {"a-app", "b-app", "c-app", "gone", "kept", "many", *(f"app{n}" for n in range(5))}


def mine(apps: list[dict[str, object]]) -> list[dict[str, object]]:
    return [item for item in apps if item["appName"] in OURS]


async def test_apps_and_users_are_listed_by_name_with_their_sessions(
    client: httpx.AsyncClient,
) -> None:
    for app, user in [("b-app", "zed"), ("a-app", "ann"), ("a-app", "ann"), ("a-app", "bo")]:
        await create(client, app, user)
    await create(client, "c-app", "cy", ttl=1)
    apps = (await client.get("/apps")).json()
    assert [(item["appName"], item["sessionCount"]) for item in mine(apps["apps"])] == [
        ("a-app", 3),
        ("b-app", 1),
        ("c-app", 1),
    ]
    users = (await client.get("/apps/a-app/users")).json()
    assert [(item["userId"], item["sessionCount"]) for item in users["users"]] == [
        ("ann", 2),
        ("bo", 1),
    ]
    session = (await client.get("/apps/a-app/users/bo/sessions")).json()["sessions"][0]
    assert users["users"][1]["lastUpdateTime"] == pytest.approx(session["lastUpdateTime"])
    assert (await client.get("/apps/nothing/users")).json() == {"users": [], "nextPageToken": None}


async def test_expired_sessions_are_not_counted(client: httpx.AsyncClient) -> None:
    await create(client, "gone", "u", ttl=1)
    await create(client, "kept", "u")
    await asyncio.sleep(1.1)  # expired, not yet swept
    listed = (await client.get("/apps")).json()["apps"]
    assert [item["appName"] for item in mine(listed)] == ["kept"]


async def test_pages_follow_each_other_and_tokens_stay_with_their_listing(
    client: httpx.AsyncClient,
) -> None:
    for number in range(5):
        await create(client, f"app{number}", "u")
        await create(client, "many", f"user{number}")
    seen, token = [], None
    while True:
        page = (await client.get("/apps", params={"pageSize": 2, "pageToken": token})).json()
        seen += [item["appName"] for item in mine(page["apps"])]
        token = page["nextPageToken"]
        if token is None:
            break
    assert seen == [f"app{number}" for number in range(5)] + ["many"]
    first = (await client.get("/apps/many/users", params={"pageSize": 2})).json()
    elsewhere = await client.get("/apps", params={"pageToken": first["nextPageToken"]})
    assert elsewhere.status_code == 422


@pytest.fixture(scope="module")
async def secured(database_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with client_of(Settings(database_url=database_url, auth=True)) as http:
        yield http


async def test_a_key_sees_only_its_app_and_its_user(
    secured: httpx.AsyncClient, database_url: str
) -> None:
    def bearer(*scope: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {keys_command(database_url, 'create', *scope)}"}

    admin = bearer("--admin")
    for app, user in [("dir-shop", "ann"), ("dir-shop", "bo"), ("dir-bank", "cy")]:
        created = await secured.post(f"/apps/{app}/users/{user}/sessions", headers=admin)
        assert created.status_code == 201, created.text

    async def names(path: str, headers: dict[str, str], field: str, key: str) -> list[str]:
        answer = await secured.get(path, headers=headers)
        assert answer.status_code == 200, answer.text
        return [item[key] for item in answer.json()[field]]

    assert {"dir-bank", "dir-shop"} <= set(await names("/apps", admin, "apps", "appName"))
    shop, ann = bearer("--app", "dir-shop"), bearer("--app", "dir-shop", "--user", "ann")
    assert await names("/apps", shop, "apps", "appName") == ["dir-shop"]
    assert await names("/apps", ann, "apps", "appName") == ["dir-shop"]
    assert await names("/apps/dir-shop/users", shop, "users", "userId") == ["ann", "bo"]
    assert await names("/apps/dir-shop/users", ann, "users", "userId") == ["ann"]
    assert (await secured.get("/apps/dir-bank/users", headers=shop)).status_code == 403
    assert (await secured.get("/apps")).status_code == 401


async def test_a_user_key_sees_only_its_own_figures_in_the_apps(
    secured: httpx.AsyncClient, database_url: str
) -> None:
    admin = {"Authorization": f"Bearer {keys_command(database_url, 'create', '--admin')}"}
    for user in ("ann", "bo", "bo"):
        created = await secured.post(f"/apps/dir-figures/users/{user}/sessions", headers=admin)
        assert created.status_code == 201, created.text
    ann_key = keys_command(database_url, "create", "--app", "dir-figures", "--user", "ann")
    ann = {"Authorization": f"Bearer {ann_key}"}
    own = (await secured.get("/apps/dir-figures/users/ann/sessions", headers=ann)).json()
    apps = (await secured.get("/apps", headers=ann)).json()["apps"]
    # Bo's two sessions, and Bo's later activity, are not Ann's to see.
    assert [(item["appName"], item["sessionCount"]) for item in apps] == [("dir-figures", 1)]
    assert apps[0]["lastUpdateTime"] == pytest.approx(own["sessions"][0]["lastUpdateTime"])
