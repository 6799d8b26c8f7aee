// Resends, event ids, timeouts, aborts and connection errors, against local servers that
// misbehave on purpose.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  APIConnectionError,
  APITimeoutError,
  ServiceUnavailableError,
  SessionaryError,
  Sessionary,
  UnauthorizedError,
} from "../dist/esm/index.js";
import { echo, fakeServer, problem, refusedUrl, type FakeServer } from "./helpers.ts";

/** A server that answers as an append would, but reads the second request and then closes
 * its connection without an answer (as one whose idle timeout ran out as a pooled connection
 * was reused). */
function closesTheSecondRequest(): Promise<FakeServer> {
  return fakeServer((request, response, n) =>
    n === 2 ? response.socket?.destroy() : echo(request, response),
  );
}

test("an append into a connection closed under it is resent with the same event id", async () => {
  const server = await closesTheSecondRequest();
  try {
    // Under a base URL with a path of its own, too.
    const chat = new Sessionary({ baseUrl: `${server.url}/sessionary` }).session("a", "u", "s");
    await chat.appendEvent({ author: "user" });
    const event = await chat.appendEvent({ author: "agent" });
    const [, sent, resent] = server.received.map((request) => JSON.parse(request.body));
    assert.ok(sent.id, "the client gives the event an id, so that a resend is recognised");
    assert.deepEqual(resent, sent);
    assert.equal(event.id, sent.id);
    assert.equal(server.received[2]?.url, "/sessionary/apps/a/users/u/sessions/s/events");

    await chat.appendEvents([{}, { id: "e" }]);
    const batch = JSON.parse(server.received[3]!.body);
    assert.ok(batch.events[0].id);
    assert.equal(batch.events[1].id, "e");
    await chat.queueEvent({ author: "user" });
    assert.ok(JSON.parse(server.received[4]!.body).id, "a queued event is given an id too");
  } finally {
    server.close();
  }
});

test("a read into a connection closed under it is resent", async () => {
  const server = await closesTheSecondRequest();
  try {
    const client = new Sessionary({ baseUrl: server.url });
    await client.getSession("a", "u", "s");
    await client.getSession("a", "u", "s");
    assert.equal(server.received.length, 3);
  } finally {
    server.close();
  }
});

test("a create into a connection closed under it is not resent: it is a connection error", async () => {
  const server = await closesTheSecondRequest();
  try {
    const client = new Sessionary({ baseUrl: server.url });
    await client.createSession("a", "u");
    await assert.rejects(client.createSession("a", "u"), (error: unknown) => {
      return error instanceof APIConnectionError && error.cause instanceof TypeError;
    });
    assert.equal(server.received.length, 2);
  } finally {
    server.close();
  }
});

test("a refused connection is resent, whatever the request, then is an APIConnectionError", async () => {
  let attempts = 0;
  const client = new Sessionary({
    baseUrl: await refusedUrl(),
    retries: 2,
    backoff: 10,
    fetch: (request: Request) => {
      attempts++;
      return fetch(request);
    },
  });
  await assert.rejects(client.createSession("a", "u"), (error: unknown) => {
    assert.ok(error instanceof APIConnectionError && error instanceof SessionaryError);
    assert.match(
      error.message,
      /^POST http:\/\/127\.0\.0\.1:\d+\/apps\/a\/users\/u\/sessions: fetch failed \(ECONNREFUSED\)$/,
    );
    return true;
  });
  assert.equal(attempts, 3, "never sent, so safe to send again");
});

test("a 503 is resent for a read, not for a create; a search past its time limit is not", async () => {
  const server = await fakeServer((request, response, n) => {
    if (request.url.includes("/search")) return problem(response, 503, "search_timeout");
    if (n === 1 || n === 3) return problem(response, 503, "database_unavailable");
    return echo(request, response, 200);
  });
  try {
    const client = new Sessionary({ baseUrl: server.url, backoff: 10 });
    await client.getSession("a", "u", "s");
    assert.equal(server.received.length, 2);
    await assert.rejects(client.createSession("a", "u"), ServiceUnavailableError);
    assert.equal(server.received.length, 3);
    await assert.rejects(client.search("a", "refund"), (error: unknown) => {
      return error instanceof ServiceUnavailableError && error.code === "search_timeout";
    });
    assert.equal(server.received.length, 4);
  } finally {
    server.close();
  }
});

test("no answer within the timeout is an APITimeoutError, after the resends of a read", async () => {
  const server = await fakeServer(() => undefined); // never answers
  try {
    const client = new Sessionary({ baseUrl: server.url, timeout: 100, retries: 1, backoff: 10 });
    await assert.rejects(client.getSession("a", "u", "s"), APITimeoutError);
    assert.equal(server.received.length, 2);
    await assert.rejects(client.createSession("a", "u"), (error: unknown) => {
      return error instanceof APITimeoutError && error instanceof APIConnectionError;
    });
    assert.equal(server.received.length, 3);
  } finally {
    server.close();
  }
});

test("an abort rejects as an abort, and is not resent", async () => {
  const server = await fakeServer(() => undefined); // never answers
  try {
    const client = new Sessionary({ baseUrl: server.url });
    const abort = new AbortController();
    setTimeout(() => abort.abort(), 50);
    await assert.rejects(client.getSession("a", "u", "s", { signal: abort.signal }), (error: unknown) => {
      return error instanceof Error && error.name === "AbortError" && !(error instanceof SessionaryError);
    });
    assert.equal(server.received.length, 1);
    await assert.rejects(client.health({ signal: AbortSignal.abort() }), { name: "AbortError" });
  } finally {
    server.close();
  }
});

test("the key is sent as a bearer token, and a refusal is its own error", async () => {
  const seen: (string | null)[] = [];
  const keyed = new Sessionary({
    apiKey: "sk_test",
    fetch: async (request: Request) => {
      seen.push(request.headers.get("Authorization"));
      const body = {
        type: "urn:sessionary:problem:unauthorized",
        title: "Unauthorized",
        status: 401,
        detail: "No key.",
        code: "unauthorized",
      };
      return Response.json(body, { status: 401, headers: { "Content-Type": "application/problem+json" } });
    },
  });
  await assert.rejects(keyed.getAppState("x"), UnauthorizedError);
  assert.deepEqual(seen, ["Bearer sk_test"]);
});
