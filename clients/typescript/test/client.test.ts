// Every method of `Sessionary` (the built dist/esm/) against the live server at SESSIONARY_URL.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  InvalidRequestError,
  NotFoundError,
  SessionAlreadyExistsError,
  SessionClosedError,
  SessionNotFoundError,
  Sessionary,
  StaleSessionError,
  ToolCallsPendingError,
  ifMatch,
  type EventIn,
} from "../dist/esm/index.js";
import { freshApp } from "./helpers.ts";

assert.ok(process.env.SESSIONARY_URL, "SESSIONARY_URL names the server to test against");
const client = new Sessionary();

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const item of items) all.push(item);
  return all;
}

function call(id: string, name = "get_weather"): EventIn {
  return {
    author: "forecaster",
    content: { role: "model", parts: [{ functionCall: { id, name, args: {} } }] },
  };
}

test("sessions are created, read, listed, updated and deleted", async () => {
  const app = freshApp();
  const created = await client.createSession(app, "ada", {
    sessionId: "s1",
    state: { "user:units": "metric", mood: "calm" },
    displayName: "Oslo",
    labels: { topic: "weather" },
  });
  assert.equal(created.id, "s1");
  assert.equal(created.version, 0);
  assert.equal(created.displayName, "Oslo");
  await client.createSession(app, "ada", { sessionId: "s2" });
  await client.createSession(app, "bob");

  const read = await client.getSession(app, "ada", "s1");
  assert.deepEqual(read.state, { "user:units": "metric", mood: "calm" });
  assert.deepEqual(read.events, []);

  const labelled = await client.listSessions(app, "ada", { labels: { topic: "weather" } });
  assert.deepEqual(
    labelled.sessions.map((session) => session.id),
    ["s1"],
  );
  assert.equal(labelled.nextPageToken, null);
  const everyOne = await collect(client.sessions(app, "ada", { pageSize: 1 }));
  assert.deepEqual(everyOne.map((session) => session.id).sort(), ["s1", "s2"]);
  const page = await client.listAppSessions(app, { pageSize: 2 });
  assert.equal(page.sessions.length, 2);
  assert.ok(page.nextPageToken);
  const users = (await collect(client.appSessions(app, { pageSize: 2 }))).map((session) => session.userId);
  assert.deepEqual(users.sort(), ["ada", "ada", "bob"]);

  const renamed = await client.updateSession(
    app,
    "ada",
    "s1",
    { displayName: "Bergen", labels: {} },
    { ifMatch: 0 },
  );
  assert.equal(renamed.displayName, "Bergen");
  assert.deepEqual(renamed.labels, {});
  const updated = await client.updateState(app, "ada", "s1", { mood: "glad" });
  assert.equal(updated.state.mood, "glad");
  assert.equal(updated.events.at(-1)?.author, "user");

  await client.deleteSession(app, "ada", "s2", { ifMatch: "*" });
  await assert.rejects(client.getSession(app, "ada", "s2"), (error: unknown) => {
    return (
      error instanceof SessionNotFoundError && error.status === 404 && error.code === "session_not_found"
    );
  });
});

test("an append says whether it stored the event, found it stored or acknowledged a partial one", async () => {
  const app = freshApp();
  const chat = client.session(app, "ada", (await client.createSession(app, "ada")).id);
  const event = { id: "e1", author: "user", content: { parts: [{ text: "Oslo?" }] } };
  const stored = await chat.appendEventOutcome(event);
  assert.deepEqual([stored.outcome, stored.event.seq, stored.event.id], ["stored", 1, "e1"]);
  // Sent again, as after a lost answer: the stored event, nothing written.
  const replayed = await chat.appendEventOutcome(event, { ifMatch: 0 });
  assert.deepEqual([replayed.outcome, replayed.event.seq], ["replayed", 1]);
  const partial = await client.appendEventOutcome(app, "ada", chat.sessionId, { author: "agent", partial: true });
  assert.deepEqual([partial.outcome, partial.event.seq], ["acknowledged", undefined]);
  assert.equal((await chat.get()).version, 1);
});

test("events are appended under If-Match, paged, rewritten and removed", async () => {
  const app = freshApp();
  const session = await client.createSession(app, "ada");
  const chat = client.session(app, "ada", session.id);
  const first = await chat.appendEvent(
    { author: "user", content: { parts: [{ text: "Oslo?" }] } },
    { ifMatch: session.version },
  );
  assert.equal(first.seq, 1);
  assert.ok(first.id, "the client gives an event without an id one");
  await assert.rejects(chat.appendEvent({ author: "user" }, { ifMatch: 0 }), (error: unknown) => {
    return error instanceof StaleSessionError && error.status === 412 && error.currentVersion === 1;
  });
  // The ETag as read works as ifMatch too.
  const again = await chat.appendEvent({ id: "e2", author: "agent" }, { ifMatch: '"1"' });
  assert.equal(again.seq, 2);
  // An append resent after its answer was lost gets the stored event back.
  assert.equal((await chat.appendEvent({ id: "e2", author: "agent" })).seq, 2);

  const batch = await chat.appendEvents([{ author: "user" }, { id: "e4", author: "agent" }], { ifMatch: 2 });
  assert.deepEqual(
    batch.map((event) => event.seq),
    [3, 4],
  );
  const partial = await chat.appendEvent({
    author: "agent",
    partial: true,
    content: { parts: [{ text: "Ra" }] },
  });
  assert.equal(partial.seq, undefined);
  assert.equal((await chat.get()).version, 4);

  const onePage = await chat.listEvents({ pageSize: 3 });
  assert.deepEqual(
    onePage.events.map((event) => event.seq),
    [1, 2, 3],
  );
  assert.ok(onePage.nextPageToken);
  assert.deepEqual(
    (await collect(chat.events({ pageSize: 1, afterSeq: 1 }))).map((event) => event.seq),
    [2, 3, 4],
  );
  assert.deepEqual(
    (await chat.get({ numRecentEvents: 1 })).events.map((event) => event.seq),
    [4],
  );

  // Walked by hand, without a type annotation on the token (no TS7022: the page is typed).
  let pageToken;
  const seqs: number[] = [];
  do {
    const page = await client.listEvents(app, "ada", session.id, { pageSize: 2, pageToken, order: "desc" });
    seqs.push(...page.events.map((event) => event.seq));
    pageToken = page.nextPageToken;
  } while (pageToken);
  assert.deepEqual(seqs, [4, 3, 2, 1]);

  const rewritten = await chat.rewriteEvent("e2", { parts: [{ text: "[redacted]" }] }, { ifMatch: 4 });
  assert.deepEqual(rewritten.content, { parts: [{ text: "[redacted]" }] });
  const removed = await chat.removeEvent("e4");
  assert.deepEqual(removed.removedEventIds, ["e4"]);
  assert.equal(removed.version, 6);
});

test("forks, children, lineage, close, rewind, trim and reset", async () => {
  const app = freshApp();
  await client.createSession(app, "ada", { sessionId: "trip", state: { plan: "none" } });
  const trip = client.session(app, "ada", "trip");
  await trip.appendEvents([
    { author: "user", invocationId: "inv-1", content: { parts: [{ text: "Flights to Oslo?" }] } },
    {
      ...call("call-1", "find_flights"),
      invocationId: "inv-1",
      actions: { stateDelta: { plan: "searching" } },
    },
    { author: "user", invocationId: "inv-2", actions: { stateDelta: { plan: "Bergen" } } },
  ]);

  const fork = await trip.fork({ sessionId: "trip-oslo", beforeInvocationId: "inv-2" });
  assert.equal(fork.id, "trip-oslo");
  assert.equal(fork.kind, "fork");
  assert.deepEqual(fork.parent, { sessionId: "trip", seq: 2, functionCallId: null });
  assert.equal(fork.state.plan, "searching");
  const atOne = await trip.fork({ atSeq: 1 });
  assert.equal((await client.getSession(app, "ada", atOne.id)).events.length, 1);

  const child = await trip.createChild({
    sessionId: "flights",
    functionCallId: "call-1",
    state: { to: "OSL" },
  });
  assert.equal(child.kind, "child");
  assert.equal(child.parent?.functionCallId, "call-1");
  assert.deepEqual(
    (await client.lineage(app, "ada", "flights")).map((session) => session.id),
    ["trip"],
  );
  const kids = await collect(trip.children({ pageSize: 2 }));
  assert.deepEqual(
    kids.map((session) => session.id),
    ["trip-oslo", atOne.id, "flights"],
  );
  assert.equal((await trip.listChildren({ pageSize: 2 })).sessions.length, 2);

  const closed = await client.close(app, "ada", "flights", "completed", { result: { cheapest: "SK4011" } });
  assert.equal(closed.status, "closed");
  assert.equal(closed.outcome, "completed");
  const answer = (await trip.get({ numRecentEvents: 1 })).events[0];
  assert.deepEqual(answer?.content, {
    role: "user",
    parts: [
      {
        functionResponse: {
          id: "call-1",
          name: "find_flights",
          response: { outcome: "completed", result: { cheapest: "SK4011" } },
        },
      },
    ],
  });
  await assert.rejects(client.appendEvent(app, "ada", "flights", { author: "user" }), SessionClosedError);

  const rewind = await trip.rewind("inv-2");
  assert.equal(rewind.actions?.rewindBeforeInvocationId, "inv-2");
  assert.equal((await trip.get()).state.plan, "searching");
  // The newest two are the call's answer and the rewind: the answer goes with its call.
  assert.deepEqual(await trip.trim(2), { removedEvents: 4, keptEvents: 1, version: 6 });
  assert.deepEqual(await trip.reset({ ifMatch: 6 }), { removedEvents: 1, keptEvents: 0, version: 7 });
  assert.deepEqual((await trip.get()).events, []);
});

test("context, compaction, tool calls, heal and the queue", async () => {
  const app = freshApp();
  const session = await client.createSession(app, "ada");
  const chat = client.session(app, "ada", session.id);
  await chat.appendEvents([
    { author: "user", content: { role: "user", parts: [{ text: "What is the weather in Oslo?" }] } },
    {
      author: "forecaster",
      content: { role: "model", parts: [{ text: "Sunny in Oslo, up to 21 degrees." }] },
    },
    call("w2"),
  ]);

  const view = await chat.context({ tokenBudget: 1000 });
  assert.deepEqual(
    view.events.map((event) => event.seq),
    [1, 2, 3],
  );
  assert.equal(view.overBudget, false);
  const summary = await chat.compact("summary", { keepLast: 1, summary: "Oslo: sunny." });
  assert.deepEqual(summary.actions?.compaction?.compactedContent, {
    role: "model",
    parts: [{ text: "Oslo: sunny." }],
  });

  assert.deepEqual(
    (await chat.toolCalls()).map((found) => [found.id, found.status]),
    [["w2", "pending"]],
  );
  const orphans = await chat.toolCalls({ status: "orphaned", timeoutSeconds: 0 });
  assert.deepEqual(
    orphans.map((found) => found.id),
    ["w2"],
  );

  const queued = await chat.queueEvent({ author: "user", content: { parts: [{ text: "Thanks!" }] } });
  assert.ok(queued.id, "a queued event is given an id, so that a resend queues it once");
  assert.deepEqual(
    (await chat.pending()).map((event) => event.id),
    [queued.id],
  );
  await assert.rejects(chat.promotePending(), (error: unknown) => {
    return error instanceof ToolCallsPendingError && error.callIds.join() === "w2";
  });

  const healed = await chat.heal({ timeoutSeconds: 0 });
  assert.equal(healed.healed, 1);
  assert.equal((await chat.heal({ timeoutSeconds: 0 })).healed, 0);
  const promoted = await chat.promotePending();
  assert.deepEqual(
    promoted.map((event) => event.id),
    [queued.id],
  );
  await chat.queueEvent({ author: "user" });
  await chat.clearPending();
  assert.deepEqual(await chat.pending(), []);
  assert.deepEqual(await chat.promotePending(), []);
});

test("a session is exported and imported exactly", async () => {
  const app = freshApp();
  const session = await client.createSession(app, "ada", { sessionId: "chat", state: { topic: "weather" } });
  await client.appendEvents(app, "ada", session.id, [{ author: "user" }, { author: "agent" }]);
  const ndjson = await client.export(app, "ada", "chat");
  const [header, ...events] = ndjson
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line));
  assert.equal(header.format, "sessionary.session.v1");
  assert.equal(header.eventCount, 2);
  assert.deepEqual(
    events.map((event) => event.seq),
    [1, 2],
  );

  const imported = await client.import(app, "bob", ndjson);
  assert.deepEqual([imported.id, imported.userId, imported.version], ["chat", "bob", 2]);
  assert.equal((await client.import(app, "bob", ndjson)).version, 2, "the same export again writes nothing");
  assert.deepEqual((await client.getSession(app, "bob", "chat")).state, { topic: "weather" });
});

test("search, usage, apps, users, app and user state, health", async () => {
  const app = freshApp();
  const session = await client.createSession(app, "ada");
  await client.appendEvents(app, "ada", session.id, [
    { author: "user", content: { parts: [{ text: "a full refund please" }] } },
    {
      author: "agent",
      content: { parts: [{ text: "the refund is on its way" }] },
      usageMetadata: { promptTokenCount: 12, candidatesTokenCount: 3, totalTokenCount: 15 },
    },
  ]);
  await client.createSession(app, "bob");

  const found = await client.search(app, "refund", { pageSize: 1 });
  assert.equal(found.hits.length, 1);
  assert.match(found.hits[0]!.snippet, /<mark>refund<\/mark>/);
  const hits = await collect(client.searchHits(app, "refund", { userId: "ada", pageSize: 1 }));
  assert.deepEqual(hits.map((hit) => hit.seq).sort(), [1, 2]);
  assert.equal((await client.usage(app, { userId: "ada" })).total.totalTokenCount, 15);

  assert.deepEqual(
    (await client.listUsers(app)).users.map((user) => user.userId),
    ["ada", "bob"],
  );
  assert.deepEqual(
    (await collect(client.users(app, { pageSize: 1 }))).map((user) => user.userId),
    ["ada", "bob"],
  );
  const apps = await collect(client.apps({ pageSize: 1000 }));
  assert.equal(apps.find((summary) => summary.appName === app)?.sessionCount, 2);
  assert.ok((await client.listApps({ pageSize: 1 })).apps.length === 1);

  assert.deepEqual(await client.getAppState(app), {});
  assert.deepEqual(await client.updateAppState(app, { greeting: "hei" }), { greeting: "hei" });
  assert.deepEqual(await client.updateUserState(app, "ada", { units: "metric" }), { units: "metric" });
  assert.deepEqual(await client.getUserState(app, "ada"), { units: "metric" });
  assert.deepEqual((await client.getSession(app, "ada", session.id)).state, {
    "app:greeting": "hei",
    "user:units": "metric",
  });

  assert.deepEqual(await client.health(), { status: "ok" });
  assert.equal((await client.readiness()).status, "ready");
});

test("events are counted; the key's scope and the metrics are read", async () => {
  const app = freshApp();
  const chat = client.session(app, "ada", (await client.createSession(app, "ada")).id);
  assert.deepEqual(await chat.countEvents(), { count: 0, firstSeq: null, lastSeq: null });
  await chat.appendEvents([{ author: "user" }, { author: "agent" }, { author: "user" }]);
  await chat.trim(2);
  assert.deepEqual(await client.countEvents(app, "ada", chat.sessionId), { count: 2, firstSeq: 2, lastSeq: 3 });

  // The test server checks no keys: every request reaches everything.
  assert.deepEqual(await client.keyScope(), {
    authEnabled: false,
    keyId: null,
    appName: null,
    userId: null,
    readOnly: false,
    writesAppState: true,
  });
  assert.match(await client.metrics(), /^# (HELP|TYPE) /m);
});

test("error answers are thrown as the class their code names", async () => {
  const app = freshApp();
  await client.createSession(app, "ada", { sessionId: "s" });
  await assert.rejects(client.createSession(app, "ada", { sessionId: "s" }), (error: unknown) => {
    return (
      error instanceof SessionAlreadyExistsError &&
      error.status === 409 &&
      error.problem.instance === `/apps/${app}/users/ada/sessions`
    );
  });
  await assert.rejects(client.getSession(app, "ada", "s", { numRecentEvents: -1 }), (error: unknown) => {
    return error instanceof InvalidRequestError && error.errors[0]?.loc.includes("numRecentEvents") === true;
  });
  await assert.rejects(client.lineage(app, "ada", "missing"), NotFoundError);
  await assert.rejects(
    client.appendEvent(app, "ada", "s", { author: "user" }, { ifMatch: "v7" }),
    RangeError,
  );
  assert.deepEqual(ifMatch(7), { "if-match": '"7"' });
});

test("an id `.` or `..` is refused before it can reach another route", async () => {
  const app = freshApp();
  await client.createSession(app, "ada", { sessionId: "s" });
  await client.appendEvent(app, "ada", "s", { id: "e1", author: "user" });
  for (const dots of [".", ".."]) {
    await assert.rejects(client.removeEvent(app, "ada", "s", dots), (error: unknown) => {
      return error instanceof InvalidRequestError && error.errors[0]?.loc.join(".") === "path.event_id";
    });
    await assert.rejects(client.getSession(app, dots, "s"), InvalidRequestError);
  }
  const kept = await client.getSession(app, "ada", "s");
  assert.deepEqual(
    kept.events.map((event) => event.id),
    ["e1"],
  );
});

test("a string with a lone surrogate, which UTF-8 cannot encode, is refused before it is sent", async () => {
  let sent = 0;
  const counted = new Sessionary({
    fetch: async (request: Request) => {
      sent++;
      return fetch(request);
    },
  });
  const app = freshApp();
  await counted.createSession(app, "ada", { sessionId: "s" });
  const refused: [string, () => Promise<unknown>][] = [
    ["path.session_id", () => counted.getSession(app, "ada", "s\ud800")],
    ["path.user_id", () => counted.deleteSession(app, "ada\udc00", "s")],
    ["body", () => counted.createSession(app, "ada", { sessionId: "t\ud800" })],
    ["body", () => counted.appendEvent(app, "ada", "s", { id: "e\ud800", author: "user" })],
    ["body", () => counted.appendEvents(app, "ada", "s", [{ id: "e\udfff", author: "user" }])],
    ["body", () => counted.updateState(app, "ada", "s", { "k\ud800": 1 })],
    ["body", () => counted.import(app, "ada", '{"id": "s\ud800"}\n')],
  ];
  const before = sent;
  for (const [where, attempt] of refused) {
    await assert.rejects(attempt(), (error: unknown) => {
      assert.ok(error instanceof InvalidRequestError, `${where}: ${error}`);
      assert.match(error.detail, new RegExp(`^${where}: .* must be valid UTF-8 \\(not sent\\)$`));
      assert.deepEqual(
        error.errors.map((item) => item.loc),
        [where.split(".")],
      );
      return true;
    });
  }
  assert.equal(sent, before, "none was sent");
  // A surrogate pair is one character, and text that only reads like an escape is text.
  for (const id of ["e\ud83d\ude00", "e\\ud800", "e\\\\ud800"]) {
    assert.equal((await counted.appendEvent(app, "ada", "s", { id, author: "user" })).id, id);
  }
});

test("a read after a write asks for the version the write made", async () => {
  const sent: string[] = [];
  const watched = new Sessionary({
    fetch: async (request: Request) => {
      sent.push(request.url);
      return fetch(request);
    },
  });
  const app = freshApp();
  await watched.createSession(app, "ada", { sessionId: "s" });
  await watched.getSession(app, "ada", "s", { minVersion: 0 });
  await watched.appendEvent(app, "ada", "s", { author: "user" });
  await watched.listEvents(app, "ada", "s");
  await watched.lineage(app, "ada", "s");
  const forked = await watched.fork(app, "ada", "s");
  await watched.getSession(app, "ada", forked.id);
  const minVersions = sent.map((address) => new URL(address).searchParams.get("minVersion"));
  assert.deepEqual(minVersions, [null, "0", null, "1", null, null, "1"]);
});
