// The built client (dist/) against a live Sessionary at SESSIONARY_URL, with keys off.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { pathToFileURL } from "node:url";

import {
  InvalidRequestError,
  SessionAlreadyExistsError,
  SessionNotFoundError,
  StaleSessionError,
  UnauthorizedError,
  createSessionaryClient,
  ifMatch,
  iterEvents,
  iterSessions,
  ok,
  versionOf,
} from "../dist/index.js";

assert.ok(process.env.SESSIONARY_URL, "SESSIONARY_URL names the server to test against");
const client = createSessionaryClient();
const SESSIONS = "/apps/{app_name}/users/{user_id}/sessions";
const SESSION = "/apps/{app_name}/users/{user_id}/sessions/{session_id}";
const EVENTS = "/apps/{app_name}/users/{user_id}/sessions/{session_id}/events";

function user() {
  return { app_name: `ts-${randomUUID().slice(0, 8)}`, user_id: "ada" };
}

test("a session is created, appended to under If-Match and read back", async () => {
  const ids = user();
  const created = await client.POST(SESSIONS, {
    params: { path: ids },
    body: { sessionId: "s1", state: { "user:units": "metric", mood: "calm" } },
  });
  assert.equal(created.response.status, 201);
  assert.equal(versionOf(created.response), 0);
  const path = { ...ids, session_id: "s1" };
  const event = await ok(
    client.POST(EVENTS, {
      params: { path, header: ifMatch(created.data!.version) },
      body: { author: "user", content: { parts: [{ text: "Oslo?" }] } },
    }),
  );
  assert.equal(event.seq, 1);
  const read = await client.GET(SESSION, { params: { path } });
  assert.equal(read.data?.version, 1);
  assert.deepEqual(read.data?.state, { "user:units": "metric", mood: "calm" });
  // The ETag as read works as If-Match too.
  const etag = read.response.headers.get("ETag")!;
  await ok(client.POST(EVENTS, { params: { path, header: ifMatch(etag) }, body: { author: "agent" } }));
});

test("errors are thrown as the class their code names", async () => {
  const ids = user();
  await assert.rejects(
    client.GET(SESSION, { params: { path: { ...ids, session_id: "missing" } } }),
    (error: unknown) => error instanceof SessionNotFoundError && error.status === 404,
  );
  await ok(client.POST(SESSIONS, { params: { path: ids }, body: { sessionId: "s" } }));
  await assert.rejects(
    client.POST(SESSIONS, { params: { path: ids }, body: { sessionId: "s" } }),
    SessionAlreadyExistsError,
  );
  const path = { ...ids, session_id: "s" };
  await ok(client.POST(EVENTS, { params: { path }, body: { author: "user" } }));
  await assert.rejects(
    client.POST(EVENTS, { params: { path, header: ifMatch(0) }, body: { author: "user" } }),
    (error: unknown) => error instanceof StaleSessionError && error.currentVersion === 1,
  );
  await assert.rejects(
    client.GET(SESSION, { params: { path, query: { numRecentEvents: -1 } } }),
    (error: unknown) =>
      error instanceof InvalidRequestError && error.errors[0]?.loc.includes("numRecentEvents") === true,
  );
  assert.throws(() => ifMatch("v7"), RangeError);
});

test("a partial event is acknowledged with its own schema, not stored", async () => {
  const ids = user();
  await ok(client.POST(SESSIONS, { params: { path: ids }, body: { sessionId: "s" } }));
  const path = { ...ids, session_id: "s" };
  const partial = await client.POST(EVENTS, {
    params: { path },
    body: { author: "agent", partial: true, content: { parts: [{ text: "Ra" }] } },
  });
  assert.equal(partial.response.status, 202);
  assert.equal(versionOf(partial.response), undefined);
  assert.equal((await ok(client.GET(SESSION, { params: { path } }))).version, 0);
});

test("iterators walk every page", async () => {
  const ids = user();
  for (const session_id of ["a", "b", "c"]) {
    await ok(client.POST(SESSIONS, { params: { path: ids }, body: { sessionId: session_id } }));
  }
  const path = { ...ids, session_id: "a" };
  const events = Array.from({ length: 5 }, (_, n) => ({ id: `e${n}`, author: "user" }));
  await ok(client.POST(`${EVENTS}:batch`, { params: { path }, body: { events } }));
  const seqs: number[] = [];
  for await (const event of iterEvents(client, ids.app_name, ids.user_id, "a", { pageSize: 2 })) {
    seqs.push(event.seq);
  }
  assert.deepEqual(seqs, [1, 2, 3, 4, 5]);
  const names: string[] = [];
  for await (const session of iterSessions(client, ids.app_name, ids.user_id, { pageSize: 2 })) {
    names.push(session.id);
  }
  assert.deepEqual(names.sort(), ["a", "b", "c"]);
});

test("a read after a write asks for the version the write made", async () => {
  const sent: string[] = [];
  const watched = createSessionaryClient({
    fetch: async (request: Request) => {
      sent.push(request.url);
      return fetch(request);
    },
  });
  const ids = user();
  const path = { ...ids, session_id: "s" };
  await ok(watched.POST(SESSIONS, { params: { path: ids }, body: { sessionId: "s" } }));
  await ok(watched.GET(SESSION, { params: { path } }));
  await ok(watched.POST(EVENTS, { params: { path }, body: { author: "user" } }));
  await ok(watched.GET(EVENTS, { params: { path } }));
  await ok(watched.GET(`${SESSION}/lineage`, { params: { path } }));
  const minVersions = sent.map((address) => new URL(address).searchParams.get("minVersion"));
  assert.deepEqual(minVersions, [null, "0", null, "1", null]);
});

test("the key is sent as a bearer token, and a refusal is its own error", async () => {
  const seen: (string | null)[] = [];
  const keyed = createSessionaryClient({
    apiKey: "sk_test",
    fetch: async (request: Request) => {
      seen.push(request.headers.get("Authorization"));
      const problem = { type: "urn:sessionary:problem:unauthorized", title: "Unauthorized" };
      const body = { ...problem, status: 401, detail: "No key.", code: "unauthorized" };
      return Response.json(body, { status: 401, headers: { "Content-Type": "application/problem+json" } });
    },
  });
  await assert.rejects(keyed.GET("/apps/{app_name}/state", { params: { path: { app_name: "x" } } }), UnauthorizedError);
  assert.deepEqual(seen, ["Bearer sk_test"]);
});

test("the READMEs' example runs as written", async () => {
  const here = new URL(".", import.meta.url);
  for (const readme of ["../README.md", "../../../README.md"]) {
    const text = await readFile(new URL(readme, here), "utf8");
    const block = /( *)```ts\n([\s\S]*?)\n *```/.exec(text.slice(text.indexOf("sessionary-client")));
    assert.ok(block, readme);
    const [, indent, code] = block;
    const example = code!
      .split("\n")
      .map((line) => line.slice(indent!.length))
      .join("\n")
      .replace(`"sessionary-client"`, JSON.stringify(new URL("../dist/index.js", here).href))
      .replace("http://127.0.0.1:8000", process.env.SESSIONARY_URL!)
      .replaceAll("weather-bot", `weather-bot-${randomUUID().slice(0, 8)}`);
    const file = join(await mkdtemp(join(tmpdir(), "readme-")), "example.ts");
    await writeFile(file, example);
    const printed: unknown[][] = [];
    const log = console.log;
    console.log = (...args: unknown[]) => printed.push(args);
    try {
      await import(pathToFileURL(file).href);
    } finally {
      console.log = log;
    }
    assert.deepEqual(printed, [[1, "user"]], readme);
  }
});

/**
 * A server that keeps connections open and answers every request as an append would, but the
 * second one, which it reads and then closes the connection on (as a server whose idle timeout
 * ran out just as a pooled connection was reused). Gives its URL and the bodies it read.
 */
async function closesTheSecondRequest(): Promise<{ url: string; bodies: string[]; close: () => void }> {
  const bodies: string[] = [];
  const server = createServer(async (request, response) => {
    let body = "";
    for await (const chunk of request) body += chunk;
    bodies.push(body);
    if (bodies.length === 2) {
      request.socket.destroy();
      return;
    }
    response.writeHead(201, { "Content-Type": "application/json" });
    response.end(JSON.stringify({ ...JSON.parse(body || "{}"), seq: 1 }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, bodies, close: () => server.close() };
}

test("an append into a connection closed under it is resent with the same event id", async () => {
  const server = await closesTheSecondRequest();
  try {
    const pooled = createSessionaryClient({ baseUrl: server.url });
    const path = { app_name: "a", user_id: "u", session_id: "s" };
    await ok(pooled.POST(EVENTS, { params: { path }, body: { author: "user" } }));
    const event = await ok(pooled.POST(EVENTS, { params: { path }, body: { author: "agent" } }));
    const [, sent, resent] = server.bodies.map((body) => JSON.parse(body));
    assert.ok(sent.id, "the client gives the event an id, so that a resend is recognised");
    assert.deepEqual(resent, sent);
    assert.equal(event.id, sent.id);
    await ok(pooled.POST(`${EVENTS}:batch`, { params: { path }, body: { events: [{}, { id: "e" }] } }));
    const batch = JSON.parse(server.bodies[3]!);
    assert.equal(batch.events[1].id, "e");
    assert.ok(batch.events[0].id);
  } finally {
    server.close();
  }
});

test("a read into a connection closed under it is resent", async () => {
  const server = await closesTheSecondRequest();
  try {
    const pooled = createSessionaryClient({ baseUrl: server.url });
    const path = { app_name: "a", user_id: "u", session_id: "s" };
    await ok(pooled.GET(SESSION, { params: { path } }));
    await ok(pooled.GET(SESSION, { params: { path } }));
    assert.equal(server.bodies.length, 3);
  } finally {
    server.close();
  }
});

test("a create into a connection closed under it is not resent", async () => {
  const server = await closesTheSecondRequest();
  try {
    const pooled = createSessionaryClient({ baseUrl: server.url });
    const path = { app_name: "a", user_id: "u" };
    await ok(pooled.POST(SESSIONS, { params: { path }, body: {} }));
    await assert.rejects(pooled.POST(SESSIONS, { params: { path }, body: {} }), TypeError);
    assert.equal(server.bodies.length, 2);
  } finally {
    server.close();
  }
});
