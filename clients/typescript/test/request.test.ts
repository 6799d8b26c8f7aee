// What every call shares, whatever the operation: the server's Retry-After, options of one call,
// the request id on every error, the User-Agent; against local servers and the live one.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { test } from "node:test";

import {
  APIConnectionError,
  APITimeoutError,
  SessionNotFoundError,
  Sessionary,
  ServiceUnavailableError,
  VERSION,
} from "../dist/esm/index.js";
import { retryAfter } from "../dist/esm/raw.js";
import { echo, fakeServer, freshApp, problem, refusedUrl } from "./helpers.ts";

test("a resend waits the Retry-After the server asks", async () => {
  const server = await fakeServer((request, response, n) => {
    if (n === 1) return problem(response, 503, "search_busy", { "Retry-After": "1" });
    return echo(request, response, 200);
  });
  try {
    // The client's own backoff would resend within a millisecond.
    const client = new Sessionary({ baseUrl: server.url, backoff: 1 });
    const started = performance.now();
    await client.getSession("a", "u", "s");
    const waited = performance.now() - started;
    assert.equal(server.received.length, 2);
    assert.ok(waited >= 990, `resent after ${waited} ms, not the second asked`); // timers' grain
  } finally {
    server.close();
  }
});

test("Retry-After is seconds or a date, and at most a minute", () => {
  const inAnHour = new Date(Date.now() + 3_600_000).toUTCString();
  const anHourAgo = new Date(Date.now() - 3_600_000).toUTCString();
  const waits = ["1", "0.5", "0", "3600", inAnHour, anHourAgo].map((value) => retryAfter(value));
  assert.deepEqual(waits, [1000, 500, 0, 60_000, 60_000, 0]);
  for (const value of [null, "", "soon", "-1", "NaN"]) {
    assert.equal(retryAfter(value), undefined, `${value}: the client's backoff`);
  }
});

test("a call's own timeout, headers and retries, over the client's", async () => {
  const server = await fakeServer((request, response) => {
    if (request.url.startsWith("/slow/")) {
      setTimeout(() => echo(request, response, 200), 500);
    } else if (request.url === "/readyz") {
      problem(response, 503, "database_unavailable");
    } else if (request.url.endsWith(":stream")) {
      response.writeHead(200, { "Content-Type": "text/event-stream" });
      response.end(); // each connection ends at once
    } else {
      echo(request, response, 200);
    }
  });
  try {
    const client = new Sessionary({ baseUrl: server.url, headers: { "X-Team": "a" }, backoff: 1 });
    await client.getSession("a", "u", "s", { headers: { "X-Request-ID": "call-1", "X-Team": "b" } });
    await client.getSession("a", "u", "s");
    const [first, second] = server.received;
    assert.equal(first?.headers["x-request-id"], "call-1");
    assert.equal(first?.headers["x-team"], "b");
    assert.equal(second?.headers["x-team"], "a", "a call's headers are its own");

    // Resent twice by default (a read, a 503); once only with maxRetries: 0.
    let before = server.received.length;
    await assert.rejects(client.readiness({ maxRetries: 0 }), ServiceUnavailableError);
    assert.equal(server.received.length - before, 1);
    before = server.received.length;
    await assert.rejects(client.readiness(), ServiceUnavailableError);
    assert.equal(server.received.length - before, 3);

    // The client waits 10 s for an answer, which comes in half a second; this call 50 ms.
    const slow = new Sessionary({ baseUrl: `${server.url}/slow`, retries: 0 });
    await slow.getSession("a", "u", "s");
    await assert.rejects(
      slow.getSession("a", "u", "s", { timeout: 50, headers: { "X-Request-ID": "call-2" } }),
      (error: unknown) => error instanceof APITimeoutError && error.requestId === "call-2",
    );

    // A stream is opened again twice by default; with maxRetries: 1, once.
    before = server.received.length;
    const stream = client.streamSessions("a", "u", { maxRetries: 1, headers: { "X-Request-ID": "call-3" } });
    await assert.rejects(stream.next(), (error: unknown) => {
      return error instanceof APIConnectionError && error.requestId === "call-3";
    });
    assert.equal(server.received.length - before, 2);
    assert.equal(server.received.at(-1)?.headers["x-request-id"], "call-3");
  } finally {
    server.close();
  }
});

test("errors carry the status, the code, the headers and the request id", async () => {
  assert.ok(process.env.SESSIONARY_URL, "SESSIONARY_URL names the server to test against");
  const client = new Sessionary();
  const app = freshApp();
  await assert.rejects(client.getSession(app, "ada", "none"), (error: unknown) => {
    assert.ok(error instanceof SessionNotFoundError);
    assert.deepEqual([error.status, error.code], [404, "session_not_found"]);
    assert.ok(error.requestId, "the server names every request");
    assert.equal(error.requestId, error.headers.get("X-Request-ID"));
    return true;
  });
  // One the caller gives is the server's too.
  await assert.rejects(
    client.getSession(app, "ada", "none", { headers: { "X-Request-ID": "mine-1" } }),
    (error: unknown) => error instanceof SessionNotFoundError && error.requestId === "mine-1",
  );
  const down = new Sessionary({
    baseUrl: await refusedUrl(),
    retries: 0,
    headers: { "X-Request-ID": "mine-2" },
  });
  await assert.rejects(down.health(), (error: unknown) => {
    return error instanceof APIConnectionError && error.requestId === "mine-2";
  });
});

test("every request names the client, but in a browser, which may not", async () => {
  const manifest = JSON.parse(await readFile(new URL("../package.json", import.meta.url), "utf8"));
  assert.equal(VERSION, manifest.version);
  const server = await fakeServer((request, response) => echo(request, response, 200));
  try {
    await new Sessionary({ baseUrl: server.url }).health();
    await new Sessionary({ baseUrl: server.url, headers: { "User-Agent": "my-agent/2" } }).health();
    // A page has no `process`; its fetch sends the browser's User-Agent, and a server that
    // allows other origins allows no other.
    const node = globalThis.process;
    Reflect.set(globalThis, "process", undefined);
    let inABrowser: Sessionary;
    try {
      inABrowser = new Sessionary({ baseUrl: server.url });
    } finally {
      Reflect.set(globalThis, "process", node);
    }
    await inABrowser.health();
    const agents = server.received.map((request) => request.headers["user-agent"]);
    assert.deepEqual(agents.slice(0, 2), [`sessionary-node/${VERSION}`, "my-agent/2"]);
    assert.ok(!agents[2]?.startsWith("sessionary"), agents[2]);
  } finally {
    server.close();
  }
});
