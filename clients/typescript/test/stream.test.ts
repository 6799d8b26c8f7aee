// Live streams: against the live server at SESSIONARY_URL, and against local servers that drop
// or starve a stream on purpose.
import assert from "node:assert/strict";
import type { ServerResponse } from "node:http";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";

import {
  APIConnectionError,
  SessionNotFoundError,
  Sessionary,
  type SessionChange,
  type SessionsChange,
} from "../dist/esm/index.js";
import { fakeServer, freshApp } from "./helpers.ts";

const client = new Sessionary();

function frameOf(change: SessionChange): [string, number | undefined] {
  return [change.event, change.id];
}

test("a session's changes are streamed from afterSeq, then live, until it closes", async () => {
  const chat = client.session(freshApp(), "ada", "chat");
  await client.createSession(chat.appName, chat.userId, { sessionId: chat.sessionId });
  await chat.appendEvent({ id: "q1", author: "user" });
  const seen: [string, number | undefined][] = [];
  for await (const change of chat.streamEvents({ afterSeq: 0 })) {
    seen.push(frameOf(change));
    if (change.event === "appended" && change.data.id === "q1") {
      await chat.appendEvent({ id: "a1", author: "agent" }); // live, once the stream is open
    } else if (change.event === "appended") {
      assert.equal(change.data.seq, 2);
      await chat.close("completed");
    }
  }
  assert.deepEqual(seen, [
    ["appended", 1],
    ["appended", 2],
    ["closed", 3],
  ]);
});

test("a stream resumes after afterSeq, and stops when its signal aborts", async () => {
  const chat = client.session(freshApp(), "ada", "chat");
  await client.createSession(chat.appName, chat.userId, { sessionId: chat.sessionId });
  await chat.appendEvents([{ author: "user" }, { author: "agent" }, { author: "user" }]);
  const stop = new AbortController();
  const seqs: number[] = [];
  for await (const change of chat.streamEvents({ afterSeq: 1, signal: stop.signal })) {
    if (change.event === "appended") seqs.push(change.data.seq);
    if (seqs.length === 2) setTimeout(() => stop.abort(), 100); // while it waits for more
  }
  assert.deepEqual(seqs, [2, 3]);

  await chat.delete();
  await assert.rejects(chat.streamEvents().next(), SessionNotFoundError);
});

test("a user's and an app's streams report their sessions", async () => {
  const app = freshApp();
  const stop = new AbortController();
  const mine = client.streamSessions(app, "ada", { signal: stop.signal });
  const all = client.streamAppSessions(app, { signal: stop.signal });
  const first = Promise.all([mine.next(), all.next()]);
  // A stream of sessions starts from now: create sessions until both have opened and seen one.
  let made = 0;
  const creating = setInterval(() => void client.createSession(app, "ada", { sessionId: `s${made++}` }), 100);
  try {
    const [ada, everyone] = await first;
    assert.equal(ada.value?.event, "created");
    assert.equal(ada.value?.data.userId, "ada");
    assert.equal(everyone.value?.event, "created");
  } finally {
    clearInterval(creating);
    stop.abort();
  }
  assert.equal((await mine.next()).done, true);
});

test("an erase ends the user's stream after deleted then erased, never reopened; the app's goes on", async () => {
  const app = freshApp();
  const opened: string[] = [];
  const counted = new Sessionary({
    fetch: (request: Request, init?: RequestInit) => {
      opened.push(new URL(request.url).pathname);
      return fetch(request, init);
    },
  });
  // A user's stream opened again would wait forever: this ends it (and the test fails).
  const guard = new AbortController();
  const stop = new AbortController();
  const timer = setTimeout(() => guard.abort(), 30_000);
  const mine = counted.streamSessions(app, "ada", { signal: guard.signal });
  const all = counted.streamAppSessions(app, { signal: stop.signal });
  try {
    // Both start from now: create sessions until both have opened and seen one.
    const first = Promise.all([mine.next(), all.next()]);
    const made: string[] = [];
    for (let seen = false; !seen; ) {
      made.push((await client.createSession(app, "ada")).id);
      seen = await Promise.race([first.then(() => true), sleep(100, false)]);
    }
    const [ada] = await first;
    assert.ok(!ada.done);
    await client.eraseUser(app, "ada");
    const heard = [ada.value];
    for await (const change of mine) heard.push(change);
    assert.equal(guard.signal.aborted, false, "the user's stream ended by itself");
    const events = heard.map((change) => change.event);
    assert.deepEqual(events.slice(events.indexOf("deleted")), [...made.map(() => "deleted"), "erased"]);
    const deleted = heard.flatMap((change) => (change.event === "deleted" ? [change.data.sessionId] : []));
    assert.deepEqual(deleted.sort(), [...made].sort());
    assert.deepEqual(heard.at(-1), { event: "erased", id: undefined, data: { userId: "ada" } });
    assert.equal(opened.filter((path) => path.endsWith("/users/ada/sessions:stream")).length, 1);

    // The app's stream is told, and goes on: it hears a session created afterwards.
    await client.createSession(app, "bob", { sessionId: "later" });
    const told: SessionsChange[] = [];
    for await (const change of all) {
      told.push(change);
      if (change.event === "created" && change.data.sessionId === "later") break;
    }
    assert.ok(told.some((change) => change.event === "erased" && change.data.userId === "ada"));
    assert.equal(told.at(-1)?.event, "created");
  } finally {
    clearTimeout(timer);
    stop.abort();
  }
});

/** Writes an SSE frame in pieces, CRLF line endings and all, as a proxy may split it. */
function writeFrame(response: ServerResponse, id: number | undefined, event: string, data: unknown): void {
  const text = `${id === undefined ? "" : `id: ${id}\r\n`}event: ${event}\r\ndata: ${JSON.stringify(data)}\r\n\r\n`;
  const middle = Math.floor(text.length / 2);
  response.write(text.slice(0, middle));
  response.write(text.slice(middle));
}

function openStream(response: ServerResponse): void {
  response.writeHead(200, { "Content-Type": "text/event-stream" });
  response.flushHeaders();
}

test("a dropped stream reconnects with the key and Last-Event-ID, losing nothing", async () => {
  const server = await fakeServer((_, response, n) => {
    openStream(response);
    if (n === 1) {
      writeFrame(response, 1, "appended", { id: "q1", seq: 1 });
      setTimeout(() => response.socket?.destroy(), 50);
      return;
    }
    response.write(": heartbeat\n\n");
    writeFrame(response, 2, "appended", { id: "a1", seq: 2 });
    response.write('event: child\ndata: {"sessionId": "kid",\ndata: "change": "created"}\n\n');
    writeFrame(response, 3, "closed", { version: 3, outcome: "completed" });
  });
  try {
    const keyed = new Sessionary({ baseUrl: server.url, apiKey: "sk_test", backoff: 10 });
    const seen = [];
    for await (const change of keyed.streamEvents("a", "u", "s", { afterSeq: 0 })) seen.push(change);
    assert.deepEqual(seen.map(frameOf), [
      ["appended", 1],
      ["appended", 2],
      ["child", undefined],
      ["closed", 3],
    ]);
    assert.deepEqual(seen[2]?.data, { sessionId: "kid", change: "created" });
    const [first, second] = server.received;
    assert.equal(first?.headers["last-event-id"], "0");
    assert.equal(second?.headers["last-event-id"], "1");
    assert.equal(second?.headers.authorization, "Bearer sk_test");
  } finally {
    server.close();
  }
});

test("a silent stream is taken for lost after idleTimeout; one lost too often is an APIConnectionError", async () => {
  const server = await fakeServer((request, response, n) => {
    openStream(response);
    if (request.url.includes("/quiet/") && n === 2) writeFrame(response, 1, "deleted", {});
    // Otherwise: not a byte, not even a heartbeat.
  });
  try {
    const client = new Sessionary({ baseUrl: server.url, retries: 1, backoff: 10 });
    const seen = [];
    for await (const change of client.streamEvents("a", "u", "quiet", { idleTimeout: 100 }))
      seen.push(change.event);
    assert.deepEqual(seen, ["deleted"]);
    assert.equal(server.received[1]?.headers["last-event-id"], undefined, "no position yet: from now again");

    await assert.rejects(
      client.streamEvents("a", "u", "mute", { idleTimeout: 50 }).next(),
      (error: unknown) => {
        return error instanceof APIConnectionError && /lost 2 times/.test(error.message);
      },
    );
    assert.equal(server.received.length, 4);
  } finally {
    server.close();
  }
});
