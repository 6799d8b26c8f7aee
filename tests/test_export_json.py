"""Export and import as one JSON document (`{header, events}`), for the generated clients that
read no NDJSON: chosen by `Accept: application/json` on an export and by `Content-Type:
application/json` on an import, with what the NDJSON form holds and the same checks."""

import json
from typing import Any

import httpx

from tests.helpers import APP, USER, assert_problem, session_url
from tests.test_portability import NDJSON, conversation, export, import_, lines, read

JSON = {"Accept": "application/json"}
IMPORT = f"/apps/{APP}/users/{USER}/sessions:import"


async def export_json(client: httpx.AsyncClient, session_id: str) -> dict[str, Any]:
    response = await client.get(f"{session_url(session_id)}:export", headers=JSON)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    body: dict[str, Any] = response.json()
    return body


async def import_json(client: httpx.AsyncClient, body: Any) -> httpx.Response:
    return await client.post(IMPORT, json=body)


async def test_the_json_form_holds_the_lines_of_the_ndjson_form(client: httpx.AsyncClient):
    session = await conversation(client)
    header, *events = lines(await export(client, "talk"))
    response = await client.get(f"{session_url('talk')}:export", headers=JSON)
    assert response.headers["etag"] == f'"{session["version"]}"'
    assert response.headers["vary"] == "Accept"
    assert response.json() == {"header": header, "events": events, "artifacts": []}
    assert events == session["events"]


async def test_a_session_imported_from_json_reads_exactly_as_the_exported_one(
    client: httpx.AsyncClient,
):
    session = await conversation(client)
    ndjson = await export(client, "talk")
    document = await export_json(client, "talk")
    assert (await client.delete(session_url("talk"))).status_code == 204
    imported = await import_json(client, document)
    assert imported.status_code == 201, imported.text
    assert imported.headers["etag"] == f'"{session["version"]}"'
    assert imported.json() == {**session, "events": []}
    assert await read(client, "talk") == session
    for seq in range(session["version"] + 1):
        at = await client.get(session_url("talk"), params={"untilSeq": seq})
        assert at.status_code == 200, at.text
    assert await export(client, "talk") == ndjson
    assert await export_json(client, "talk") == document
    again = await import_json(client, document)  # the same again: nothing written
    assert again.status_code == 200, again.text
    assert await read(client, "talk") == session
    other = {**document, "header": {**document["header"], "displayName": "Another"}}
    assert_problem(await import_json(client, other), 409, "session_already_exists")


async def test_a_json_export_imports_as_ndjson_and_the_other_way(client: httpx.AsyncClient):
    session = await conversation(client)
    document = await export_json(client, "talk")
    ndjson = await export(client, "talk")
    assert (await client.delete(session_url("talk"))).status_code == 204
    assert (await import_(client, ndjson)).status_code == 201
    assert (await import_json(client, document)).status_code == 200  # the same session
    assert await read(client, "talk") == session


async def test_accept_chooses_the_form(client: httpx.AsyncClient):
    """NDJSON unless `Accept` prefers JSON: without it, or for `*/*`, it is NDJSON as it always
    was."""
    await conversation(client)
    url = f"{session_url('talk')}:export"
    for accept, form in [
        (None, "application/x-ndjson"),
        ("*/*", "application/x-ndjson"),
        ("application/*", "application/x-ndjson"),
        ("application/x-ndjson", "application/x-ndjson"),
        ("application/x-ndjson, application/json", "application/x-ndjson"),
        ("application/json;q=0.5, application/x-ndjson", "application/x-ndjson"),
        ("text/html", "application/x-ndjson"),
        ("application/json", "application/json"),
        ("application/json, */*", "application/json"),
        ("application/x-ndjson;q=0.5, application/json", "application/json"),
        ("APPLICATION/JSON; charset=utf-8", "application/json"),
        ("application/json, application/problem+json", "application/json"),
    ]:
        headers = {} if accept is None else {"Accept": accept}
        response = await client.get(url, headers=headers)
        assert response.status_code == 200, (accept, response.text)
        assert response.headers["content-type"].split(";")[0] == form, accept


async def test_a_json_import_is_refused_as_an_ndjson_one_is(client: httpx.AsyncClient):
    """The same checks, each naming the record at fault rather than the line."""
    await conversation(client)
    document = await export_json(client, "talk")
    assert (await client.delete(session_url("talk"))).status_code == 204
    header, events = document["header"], document["events"]

    missing = assert_problem(await import_json(client, {"header": header}), 422, "validation_error")
    assert "`header`, `events` and `artifacts`" in missing["detail"]
    extra = {"header": header, "events": events, "more": 1}
    assert_problem(await import_json(client, extra), 422, "validation_error")
    assert_problem(await import_json(client, [header, *events]), 422, "validation_error")
    not_a_list = {"header": header, "events": {"0": events[0]}}
    assert_problem(await import_json(client, not_a_list), 422, "validation_error")

    no_seq = {"header": header, "events": [events[0], {**events[1], "seq": None}, events[2]]}
    refused = assert_problem(await import_json(client, no_seq), 422, "validation_error")
    assert refused["detail"].startswith("`events[1]` is not a valid stored event"), refused
    bad_header = {"header": {**header, "format": "other"}, "events": events}
    refused = assert_problem(await import_json(client, bad_header), 422, "validation_error")
    assert refused["detail"].startswith("`header` is not a header"), refused
    fewer = {"header": header, "events": events[:2]}
    assert_problem(await import_json(client, fewer), 422, "validation_error")
    shuffled = {"header": header, "events": [events[1], events[0], events[2]]}
    refused = assert_problem(await import_json(client, shuffled), 422, "validation_error")
    assert "`events[1]`" in refused["detail"], refused

    duplicate = b'{"header": ' + json.dumps(header).encode() + b', "events": [], "events": []}'
    response = await client.post(
        IMPORT, content=duplicate, headers={"Content-Type": "application/json"}
    )
    assert_problem(response, 422, "validation_error")
    response = await client.post(IMPORT, content=b"{", headers={"Content-Type": "application/json"})
    assert_problem(response, 422, "validation_error")
    response = await client.post(IMPORT, json=document, headers={"Content-Type": "text/plain"})
    assert_problem(response, 415, "unsupported_media_type")
    assert (await client.get(session_url("talk"))).status_code == 404  # nothing was stored


async def test_a_json_record_nests_as_deep_as_a_line_may(client: httpx.AsyncClient, settings):
    """The body nests two levels deeper than its lines (the document, its `events`): each
    record is held to the depth a line is."""
    await conversation(client)
    document = await export_json(client, "talk")
    assert (await client.delete(session_url("talk"))).status_code == 204
    deep: Any = 1
    for _ in range(settings.max_json_depth - 2):  # below the event and its `customMetadata`
        deep = [deep]
    header, (event, *rest) = document["header"], document["events"]
    fitting = {**event, "customMetadata": {"deep": deep}}
    response = await import_json(client, {"header": header, "events": [fitting, *rest]})
    assert response.status_code == 201, response.text
    assert (await client.delete(session_url("talk"))).status_code == 204
    too_deep = {**event, "customMetadata": {"deep": [deep]}}
    ndjson = b"".join(json.dumps(line).encode() + b"\n" for line in (header, too_deep, *rest))
    line_refused = await client.post(IMPORT, content=ndjson, headers=NDJSON)
    assert_problem(line_refused, 422, "validation_error")
    refused = await import_json(client, {"header": header, "events": [too_deep, *rest]})
    assert_problem(refused, 422, "validation_error")
    state = {**header["state"], "deep": [deep]}  # the header sits one level up: as deep
    refused = await import_json(client, {"header": {**header, "state": state}, "events": rest})
    body = assert_problem(refused, 422, "validation_error")
    assert body["detail"] == "`header` is nested deeper than 64 levels.", body
