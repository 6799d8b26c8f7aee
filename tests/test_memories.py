"""Memories over HTTP: a user's and an app's, revised and rolled back, expiring, listed, recalled
by meaning and by words, and events of sessions added to memory and forgotten with them."""

import asyncio
from typing import Any

import asyncpg
import httpx

from app import db
from app.config import Settings
from app.domain import RecallQuery
from app.repositories import memories as memory_rows
from tests.embedding_server import EmbeddingServer, serve_embeddings
from tests.fixtures import client_of
from tests.helpers import APP, USER, append, assert_problem, create_session, session_url

M = f"/apps/{APP}/users/{USER}/memories"
APP_M = f"/apps/{APP}/memories"


async def remember(client: httpx.AsyncClient, base: str = M, **body: Any) -> dict[str, Any]:
    response = await client.post(base, json=body)
    assert response.status_code == 201, response.text
    assert response.headers["etag"] == f'"{response.json()["revision"]}"'
    memory: dict[str, Any] = response.json()
    return memory


async def embedded(client: httpx.AsyncClient) -> None:
    """Wait until the worker has embedded every memory."""
    for _ in range(600):
        status = (await client.get("/embeddings")).json()
        if status["pending"] == 0:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"still not embedded: {status}")


async def recall(
    client: httpx.AsyncClient, query: str, base: str = M, **body: Any
) -> dict[str, Any]:
    response = await client.post(f"{base}:recall", json={"query": query, **body})
    assert response.status_code == 200, response.text
    found: dict[str, Any] = response.json()
    return found


def texts(found: dict[str, Any]) -> list[str]:
    return [hit["memory"]["text"] for hit in found["memories"]]


async def test_a_memory_is_recalled_by_meaning_where_no_word_matches(client):
    await remember(client, text="I'm vegetarian.", topics=["food"])
    await remember(client, text="My dog is called Rex.")
    await remember(client, text="I work as a nurse in Lyon.")
    await embedded(client)
    found = await recall(client, "what food do I like?", limit=1)
    assert found["recalledBy"] == "meaning+words" and found["note"] is None
    assert texts(found) == ["I'm vegetarian."]
    assert (await client.get("/readyz")).json()["recall"] == "meaning+words"
    hit = found["memories"][0]
    assert hit["similarity"] > 0 and hit["wordScore"] is None
    words = await recall(client, "what food do I like?", mode="words")
    assert words["memories"] == [] and words["recalledBy"] == "words"


async def test_words_and_meaning_fuse_into_one_ranking(client):
    await remember(client, text="The invoice number for the laptop is INV-20931.")
    await remember(client, text="I prefer aisle seats on long flights.")
    await embedded(client)
    found = await recall(client, "INV-20931")
    assert texts(found)[0] == "The invoice number for the laptop is INV-20931."
    best = found["memories"][0]
    assert best["wordScore"] > 0 and best["score"] == max(h["score"] for h in found["memories"])
    assert 0 < best["score"] <= 1
    only_meaning = await recall(client, "where do I like to sit on a plane?", mode="meaning")
    assert only_meaning["recalledBy"] == "meaning"
    assert texts(only_meaning)[0] == "I prefer aisle seats on long flights."
    assert all(hit["wordScore"] is None for hit in only_meaning["memories"])


async def test_beside_meaning_words_must_all_match_and_alone_any_will_do(client):
    await remember(client, text="The wifi password for the cabin is x7k2p9.")
    await remember(client, text="The cabin key is under the blue pot.")
    await embedded(client)
    hybrid = await recall(client, "cabin wifi password")
    assert hybrid["recalledBy"] == "meaning+words"
    by_words = {hit["memory"]["text"]: hit["wordScore"] for hit in hybrid["memories"]}
    assert by_words["The wifi password for the cabin is x7k2p9."] > 0
    assert by_words["The cabin key is under the blue pot."] is None
    alone = await recall(client, "cabin wifi password", mode="words")
    assert sorted(texts(alone)) == [
        "The cabin key is under the blue pot.",
        "The wifi password for the cabin is x7k2p9.",
    ]


async def test_beside_meaning_a_memory_not_yet_embedded_is_found_by_any_word(database_url):
    """Meaning cannot find what no model has embedded yet: words stay lenient for those."""
    cabin = "The cabin key is under the blue pot."
    settings = Settings(database_url=database_url, auth=False, embeddings="none")
    async with client_of(settings) as client:
        await remember(client, text=cabin)
    query = RecallQuery(None, None, None, 10, 0, 0, [], None, None, True, "hybrid")
    connection = await asyncpg.connect(database_url)
    try:

        async def found() -> list[str]:
            rows = await memory_rows.by_words(
                connection,
                APP,
                [USER],
                "cabin wifi password",
                query,
                "english",
                40,
                beside_meaning=True,
            )
            return [memory_id for _, memory_id, _ in rows]

        assert len(await found()) == 1
        await connection.execute("UPDATE memories SET embedded_model = 'a-model'")
        assert await found() == []
    finally:
        await connection.execute("TRUNCATE memories, memory_revisions")
        await connection.close()


async def test_a_memory_is_revised_listed_and_rolled_back(client):
    created = await remember(client, id="diet", text="I eat fish.", topics=["food"])
    assert created["revision"] == 1 and created["kind"] == "text" and created["scope"] == "user"
    assert created["content"] == {"role": "user", "parts": [{"text": "I eat fish."}]}
    assert_problem(
        await client.post(M, json={"id": "diet", "text": "x"}), 409, "memory_already_exists"
    )
    changed = await client.patch(
        f"{M}/diet", json={"text": "I'm vegetarian."}, headers={"if-match": '"1"'}
    )
    assert changed.status_code == 200, changed.text
    assert changed.headers["etag"] == '"2"'
    assert changed.json()["text"] == "I'm vegetarian." and changed.json()["topics"] == ["food"]
    stale = await client.patch(f"{M}/diet", json={"topics": []}, headers={"if-match": '"1"'})
    assert_problem(stale, 412, "stale_memory")
    revisions = (await client.get(f"{M}/diet/revisions")).json()["revisions"]
    assert [(r["revision"], r["text"]) for r in revisions] == [
        (2, "I'm vegetarian."),
        (1, "I eat fish."),
    ]
    restored = await client.post(f"{M}/diet:rollback", json={"revision": 1})
    assert restored.status_code == 200, restored.text
    assert restored.json()["revision"] == 3 and restored.json()["text"] == "I eat fish."
    assert_problem(
        await client.post(f"{M}/diet:rollback", json={"revision": 9}), 404, "memory_not_found"
    )
    await embedded(client)
    assert texts(await recall(client, "fish")) == ["I eat fish."]
    assert (await client.get(f"{M}/diet")).json()["embedded"] is True
    assert (await client.delete(f"{M}/diet", headers={"if-match": '"3"'})).status_code == 204
    assert_problem(await client.get(f"{M}/diet"), 404, "memory_not_found")
    assert_problem(await client.delete(f"{M}/diet"), 404, "memory_not_found")
    assert (await recall(client, "fish"))["memories"] == []


async def test_content_metadata_and_source_are_kept(client):
    content = {"role": "model", "parts": [{"text": "The user"}, {"text": "likes jazz."}]}
    created = await remember(
        client,
        content=content,
        author="agent",
        metadata={"confidence": 0.9},
        source={"sessionId": "s1", "eventIds": ["e1"]},
    )
    assert created["text"] == "The user likes jazz." and created["content"] == content
    assert created["author"] == "agent" and created["metadata"] == {"confidence": 0.9}
    assert created["source"] == {"sessionId": "s1", "eventIds": ["e1"]}
    listed = (await client.get(M, params={"sessionId": "s1"})).json()["memories"]
    assert [m["id"] for m in listed] == [created["id"]]


async def test_bad_input_is_refused_and_nothing_is_written(client):
    for body in (
        {},
        {"text": "a", "content": {"parts": [{"text": "b"}]}},
        {"text": ""},
        {"text": "a", "unknown": 1},
        {"text": "a", "ttl": 5, "expireTime": 2e9},
        {"text": "a", "embedding": {"model": "m", "vector": [0, 0]}},
        {"text": "a", "topics": [""]},
        {"text": "a", "id": "a/b"},
    ):
        assert_problem(await client.post(M, json=body), 422, "validation_error")
    assert_problem(await client.post(f"{M}:recall", json={"limit": 3}), 422, "validation_error")
    assert_problem(
        await client.post(f"{M}:recall", json={"query": "a", "limit": 0}), 422, "validation_error"
    )
    assert (await client.get(M)).json() == {"memories": [], "nextPageToken": None}


async def test_an_expired_memory_is_forgotten(client):
    await remember(client, id="soon", text="The door code is 4512.", ttl=0.2)
    await remember(client, id="later", text="The door code used to be 1111.", ttl=3600)
    assert (await client.get(f"{M}/soon")).status_code == 200
    await asyncio.sleep(0.3)
    assert_problem(await client.get(f"{M}/soon"), 404, "memory_not_found")
    assert texts(await recall(client, "door code")) == ["The door code used to be 1111."]
    cleared = await client.patch(f"{M}/later", json={"expireTime": None})
    assert cleared.json()["expireTime"] is None


async def test_listing_pages_and_filters(client):
    for n in range(5):
        await remember(
            client, id=f"m{n}", text=f"fact {n}", topics=["even" if n % 2 == 0 else "odd"]
        )
    seen, token = [], None
    while True:
        params = {"pageSize": 2} | ({"pageToken": token} if token else {})
        page = (await client.get(M, params=params)).json()
        seen += [m["id"] for m in page["memories"]]
        token = page["nextPageToken"]
        if token is None:
            break
    assert seen == ["m4", "m3", "m2", "m1", "m0"]
    even = (await client.get(M, params={"topic": "even"})).json()["memories"]
    assert [m["id"] for m in even] == ["m4", "m2", "m0"]
    recalled = await recall(client, "fact", topics=["odd"])
    assert sorted(texts(recalled)) == ["fact 1", "fact 3"]


async def test_the_apps_memories_are_recalled_with_each_users(client):
    await remember(client, APP_M, text="The office closes at 6 pm on Fridays.")
    await remember(client, text="I leave the office early on Fridays.")
    await remember(client, f"/apps/{APP}/users/bob/memories", text="Bob's office is in Oslo.")
    found = await recall(client, "office Fridays")
    assert sorted((h["memory"]["scope"], h["memory"]["text"]) for h in found["memories"]) == [
        ("app", "The office closes at 6 pm on Fridays."),
        ("user", "I leave the office early on Fridays."),
    ]
    alone = await recall(client, "office Fridays", includeApp=False)
    assert texts(alone) == ["I leave the office early on Fridays."]
    apps = await recall(client, "office", APP_M)
    assert texts(apps) == ["The office closes at 6 pm on Fridays."]
    assert apps["memories"][0]["memory"]["userId"] is None


async def test_a_sessions_events_are_remembered_without_a_copy_and_forgotten_with_it(client, app):
    await create_session(client, sessionId="trip")
    said = [
        ("user", "I'm allergic to peanuts."),
        ("model", "Noted, no peanuts."),
        ("user", "My passport expires in March."),
    ]
    for author, text in said:
        event = {"author": author, "content": {"role": author, "parts": [{"text": text}]}}
        assert (await append(client, "trip", event)).status_code == 201
    remembered = await client.post(f"{session_url('trip')}:remember")
    assert remembered.status_code == 200, remembered.text
    assert remembered.json() == {"remembered": 2}
    again = await client.post(f"{session_url('trip')}:remember", json={})
    assert again.json() == {"remembered": 0}
    async with app.state.pool.connection() as connection:
        assert (
            await connection.fetchval("SELECT count(*) FROM memories WHERE text IS NOT NULL") == 0
        )
    found = await recall(client, "peanuts")
    hit = found["memories"][0]["memory"]
    assert hit["kind"] == "event" and hit["text"] == "I'm allergic to peanuts."
    assert hit["author"] == "user" and hit["source"]["sessionId"] == "trip"
    patched = await client.patch(f"{M}/{hit['id']}", json={"text": "changed"})
    assert_problem(patched, 422, "validation_error")
    tagged = await client.patch(f"{M}/{hit['id']}", json={"topics": ["health"]})
    assert tagged.json()["topics"] == ["health"] and tagged.json()["text"] == hit["text"]
    unknown = await client.post(f"{session_url('trip')}:remember", json={"eventIds": ["nope"]})
    assert_problem(unknown, 422, "validation_error")
    missing = await client.post(f"{session_url('none')}:remember")
    assert_problem(missing, 404, "session_not_found")
    await embedded(client)
    assert (await client.delete(session_url("trip"))).status_code == 204
    assert (await recall(client, "peanuts"))["memories"] == []
    async with app.state.pool.connection() as connection:
        for table in ("memories", "memory_revisions", "memory_vectors"):
            assert await connection.fetchval(f"SELECT count(*) FROM {table}") == 0, table


async def test_a_clients_vectors_are_compared_with_its_models_alone(client):
    await remember(client, text="north", embedding={"model": "mine", "vector": [1.0, 0.0, 0.0]})
    await remember(client, text="east", embedding={"model": "mine", "vector": [0.0, 1.0, 0.0]})
    found = await client.post(
        f"{M}:recall",
        json={"embedding": {"model": "mine", "vector": [0.9, 0.1, 0.0]}, "mode": "meaning"},
    )
    assert found.status_code == 200, found.text
    assert texts(found.json()) == ["north", "east"]
    assert found.json()["memories"][0]["similarity"] > 0.99
    other = await client.post(
        f"{M}:recall", json={"embedding": {"model": "theirs", "vector": [1.0, 0.0]}}
    )
    assert other.json()["memories"] == []


async def test_concurrent_revisions_with_if_match_let_exactly_one_through(client):
    await remember(client, id="race", text="v1")
    answers = await asyncio.gather(
        *(
            client.patch(f"{M}/race", json={"text": f"by {n}"}, headers={"if-match": '"1"'})
            for n in range(8)
        )
    )
    assert sorted(a.status_code for a in answers) == [200] + [412] * 7
    revisions = (await client.get(f"{M}/race/revisions")).json()["revisions"]
    assert [r["revision"] for r in revisions] == [2, 1]


async def test_concurrent_remembers_store_each_event_once(client):
    await create_session(client, sessionId="s")
    for n in range(20):
        event = {"author": "user", "content": {"parts": [{"text": f"fact number {n}"}]}}
        assert (await append(client, "s", event)).status_code == 201
    answers = await asyncio.gather(*(client.post(f"{session_url('s')}:remember") for _ in range(6)))
    assert all(a.status_code == 200 for a in answers), [a.text for a in answers]
    assert sum(a.json()["remembered"] for a in answers) == 20
    assert len((await client.get(M, params={"pageSize": 100})).json()["memories"]) == 20


async def test_a_removed_event_is_forgotten_and_a_rewritten_one_recalled_as_it_is_now(client, app):
    await create_session(client, sessionId="s")
    for n, text in enumerate(("I live in Porto.", "My sister is called Ana.")):
        event = {"id": f"e{n}", "author": "user", "content": {"parts": [{"text": text}]}}
        assert (await append(client, "s", event)).status_code == 201
    assert (await client.post(f"{session_url('s')}:remember")).json() == {"remembered": 2}
    await embedded(client)
    assert (await client.delete(f"{session_url('s')}/events/e0")).status_code == 200
    assert (await recall(client, "Porto", mode="words"))["memories"] == []
    rewritten = {"parts": [{"text": "My brother is called Rui."}]}
    assert (
        await client.patch(f"{session_url('s')}/events/e1", json={"content": rewritten})
    ).status_code == 200
    found = await recall(client, "brother Rui", mode="words")
    assert texts(found) == ["My brother is called Rui."]
    assert found["memories"][0]["memory"]["revision"] == 2
    assert (await recall(client, "sister Ana", mode="words"))["memories"] == []
    await embedded(client)
    async with app.state.pool.connection() as connection:
        assert await connection.fetchval("SELECT count(*) FROM memories") == 1
        assert await connection.fetchval("SELECT count(*) FROM memory_vectors") == 1


async def test_the_sweeper_deletes_expired_memories_with_what_they_hold(client, app):
    await remember(client, id="gone", text="temporary", ttl=0.1)
    await remember(client, id="kept", text="lasting")
    await embedded(client)
    await asyncio.sleep(0.2)
    await app.state.services.retention.sweep()
    async with app.state.pool.connection() as connection:
        for table, column in (
            ("memories", "id"),
            ("memory_revisions", "memory_id"),
            ("memory_vectors", "memory_id"),
        ):
            kept = await connection.fetch(f"SELECT {column} FROM {table}")
            assert [row[0] for row in kept] == ["kept"], table


async def test_without_pgvector_recall_is_by_words_and_says_so(new_database):
    url = await asyncio.to_thread(new_database)
    await asyncio.to_thread(db.upgrade, url)
    connection = await asyncpg.connect(url)
    try:
        await connection.execute("DROP EXTENSION vector CASCADE")
    finally:
        await connection.close()
    settings = Settings(database_url=url, auth=False, sweep_interval=86_400)
    async with client_of(settings) as client:
        await remember(client, text="I'm vegetarian.")
        found = await recall(client, "vegetarian food")
        assert texts(found) == ["I'm vegetarian."]
        assert found["recalledBy"] == "words" and "pgvector" in found["note"]
        status = (await client.get("/embeddings")).json()
        assert status["recall"] == "words" and status["pgvector"] is None
        assert (await client.get("/readyz")).json()["recall"] == "words"
        meaning = await client.post(f"{M}:recall", json={"query": "food", "mode": "meaning"})
        assert meaning.status_code == 200 and meaning.json()["memories"] == []


async def test_with_embeddings_off_the_server_embeds_nothing_but_takes_client_vectors(database_url):
    settings = Settings(
        database_url=database_url, auth=False, sweep_interval=86_400, embeddings="none"
    )
    async with client_of(settings) as client:
        await remember(client, text="north", embedding={"model": "mine", "vector": [1.0, 0.0]})
        status = (await client.get("/embeddings")).json()
        assert status["model"] is None and status["provider"] == "none"
        found = await recall(client, "north")
        assert texts(found) == ["north"] and "SESSIONARY_EMBEDDINGS=none" in found["note"]
        mine = await client.post(
            f"{M}:recall", json={"embedding": {"model": "mine", "vector": [1.0, 0.1]}}
        )
        assert mine.json()["recalledBy"] == "meaning" and texts(mine.json()) == ["north"]


async def fresh_database(new_database) -> str:
    url: str = await asyncio.to_thread(new_database)
    await asyncio.to_thread(db.upgrade, url)
    return url


def over_endpoint(url: str, server: EmbeddingServer, **settings: Any) -> Settings:
    return Settings(
        database_url=url,
        auth=False,
        sweep_interval=86_400,
        embeddings="openai",
        embeddings_url=server.url,
        embeddings_model=server.model,
        **settings,
    )


async def test_an_openai_compatible_endpoint_embeds_and_a_new_model_re_embeds_everything(
    new_database,
):
    url = await fresh_database(new_database)
    async with client_of(Settings(database_url=url, auth=False, sweep_interval=86_400)) as client:
        for text in ("I'm vegetarian.", "My dog is called Rex.", "I work night shifts."):
            await remember(client, text=text)
        await embedded(client)
    with serve_embeddings() as server:
        async with client_of(over_endpoint(url, server, embeddings_dimensions=128)) as client:
            await embedded(client)  # the backfill: every memory, by the endpoint's model
            status = (await client.get("/embeddings")).json()
            assert status["model"] == "wordllama@128" and status["provider"] == "openai"
            assert sum(r["inputs"] for r in server.requests()) >= 3
            assert {r["dimensions"] for r in server.requests()} == {128}
            found = await recall(client, "what food do I like?", limit=1)
            assert found["recalledBy"] == "meaning+words" and texts(found) == ["I'm vegetarian."]
    connection = await asyncpg.connect(url)
    try:
        models = await connection.fetch(
            "SELECT model, count(*), min(cardinality(embedding)) FROM memory_vectors "
            "GROUP BY 1 ORDER BY 1"
        )
    finally:
        await connection.close()
    assert [tuple(row) for row in models] == [
        ("wordllama/l2_supercat_256", 3, 256),
        ("wordllama@128", 3, 128),
    ]


async def test_while_the_endpoint_is_down_recall_is_by_words_and_memories_wait(new_database):
    url = await fresh_database(new_database)
    with serve_embeddings() as server:
        async with client_of(over_endpoint(url, server)) as client:
            server.stop()
            created = await remember(client, text="The spare key is under the blue pot.")
            assert created["embedded"] is False
            found = await recall(client, "spare key")
            assert texts(found) == ["The spare key is under the blue pot."]
            assert found["recalledBy"] == "words" and "unavailable" in found["note"]
            status = (await client.get("/embeddings")).json()
            assert status["pending"] == 1 and status["recall"] == "words"
