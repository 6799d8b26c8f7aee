// The memory methods of `Sessionary` (the built dist/esm/) against the live server at
// SESSIONARY_URL: a user's and an app's, revised under If-Match and rolled back, recalled by
// words and by meaning, and a session's events remembered; which of them are resent, against
// local servers.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  ConflictError,
  MemoryAlreadyExistsError,
  MemoryNotFoundError,
  NotFoundError,
  PreconditionFailedError,
  ServiceUnavailableError,
  SessionNotFoundError,
  Sessionary,
  StaleMemoryError,
  StaleSessionError,
  type Memory,
} from "../dist/esm/index.js";
import { echo, fakeServer, freshApp, problem } from "./helpers.ts";

const client = new Sessionary();

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const item of items) all.push(item);
  return all;
}

/** Until the server's model has embedded every memory: then recall finds them by meaning. */
async function allEmbedded(): Promise<void> {
  const deadline = Date.now() + 60_000;
  while ((await client.embeddingsStatus()).pending > 0) {
    assert.ok(Date.now() < deadline, "the embedding worker did not catch up within a minute");
    await new Promise((done) => setTimeout(done, 100));
  }
}

/** A memory but whether it is embedded yet, which the server's worker changes at its own pace. */
function written({ embedded: _, ...memory }: Memory) {
  return memory;
}

/** A stale write's error, with the revision the memory is at now. */
function staleAt(revision: number) {
  return (error: unknown) => {
    assert.ok(error instanceof StaleMemoryError && error instanceof PreconditionFailedError, String(error));
    assert.deepEqual([error.status, error.code, error.currentRevision], [412, "stale_memory", revision]);
    return true;
  };
}

test("a stale memory and a stale session are both a 412's PreconditionFailedError", () => {
  assert.ok(StaleMemoryError.prototype instanceof PreconditionFailedError);
  assert.ok(StaleSessionError.prototype instanceof PreconditionFailedError);
  assert.ok(MemoryNotFoundError.prototype instanceof NotFoundError);
  assert.ok(MemoryAlreadyExistsError.prototype instanceof ConflictError);
});

test("a user's memories are created, read, revised under If-Match, listed, rolled back and deleted", async () => {
  const app = freshApp();
  const made = await client.createMemory(app, "ada", {
    id: "diet",
    text: "I'm vegetarian.",
    topics: ["food"],
    metadata: { confidence: 0.9 },
    author: "user",
  });
  assert.deepEqual(
    [made.id, made.scope, made.userId, made.kind, made.revision, made.text, made.topics, made.author],
    ["diet", "user", "ada", "text", 1, "I'm vegetarian.", ["food"], "user"],
  );
  assert.deepEqual(made.metadata, { confidence: 0.9 });
  assert.deepEqual(made.content, { role: "user", parts: [{ text: "I'm vegetarian." }] });
  await assert.rejects(client.createMemory(app, "ada", { id: "diet", text: "again" }), MemoryAlreadyExistsError);
  const other = await client.createMemory(app, "ada", { text: "My sister lives in Bergen.", topics: ["family"] });
  assert.equal(typeof other.id, "string", "an id of the server's");
  assert.deepEqual(written(await client.getMemory(app, "ada", "diet")), written(made));

  // Each change is a revision; If-Match takes the revision read, and a stale one changes nothing.
  const changed = await client.updateMemory(app, "ada", "diet", { text: "I'm vegan." }, { ifMatch: made.revision });
  assert.deepEqual([changed.revision, changed.text, changed.topics], [2, "I'm vegan.", ["food"]]);
  await assert.rejects(
    client.updateMemory(app, "ada", "diet", { topics: [] }, { ifMatch: made.revision }),
    staleAt(2),
  );
  const untagged = await client.updateMemory(app, "ada", "diet", { author: null, ttl: 3600 });
  assert.deepEqual([untagged.revision, untagged.author, untagged.text], [3, null, "I'm vegan."]);
  assert.ok(untagged.expireTime !== null && untagged.expireTime > Date.now() / 1000);
  // Its ETag as read is taken too.
  const never = await client.updateMemory(app, "ada", "diet", { expireTime: null }, { ifMatch: '"3"' });
  assert.deepEqual([never.revision, never.expireTime], [4, null]);

  const page = await client.listMemoryRevisions(app, "ada", "diet", { pageSize: 2 });
  assert.deepEqual(page.revisions.map((revision) => revision.revision), [4, 3]);
  assert.equal(typeof page.nextPageToken, "string");
  const revisions = await collect(client.memoryRevisions(app, "ada", "diet", { pageSize: 1 }));
  assert.deepEqual(
    revisions.map((revision) => [revision.revision, revision.text]),
    [[4, "I'm vegan."], [3, "I'm vegan."], [2, "I'm vegan."], [1, "I'm vegetarian."]],
  );

  await assert.rejects(client.rollBackMemory(app, "ada", "diet", 1, { ifMatch: 3 }), staleAt(4));
  const restored = await client.rollBackMemory(app, "ada", "diet", 1, { ifMatch: never.revision });
  assert.deepEqual([restored.revision, restored.text, restored.author], [5, "I'm vegetarian.", "user"]);
  assert.deepEqual(written(await client.getMemory(app, "ada", "diet")), written(restored));

  const food = await client.listMemories(app, "ada", { topic: "food" });
  assert.deepEqual([food.memories.map((memory) => memory.id), food.nextPageToken], [["diet"], null]);
  assert.deepEqual((await client.listMemories(app, "ada", { kind: "event" })).memories, []);
  const every = await collect(client.memories(app, "ada", { pageSize: 1 }));
  assert.deepEqual(every.map((memory) => memory.id), ["diet", other.id], "newest change first");
  assert.deepEqual((await client.listMemories(app, "bob")).memories, [], "another user's are his own");

  await assert.rejects(client.deleteMemory(app, "ada", "diet", { ifMatch: 4 }), staleAt(5));
  await client.deleteMemory(app, "ada", "diet", { ifMatch: restored.revision });
  for (const gone of [
    () => client.getMemory(app, "ada", "diet"),
    () => client.updateMemory(app, "ada", "diet", { text: "x" }),
    () => client.listMemoryRevisions(app, "ada", "diet"),
    () => client.rollBackMemory(app, "ada", "diet", 1),
    () => client.deleteMemory(app, "ada", "diet"),
  ]) {
    await assert.rejects(gone(), (error: unknown) => {
      assert.ok(error instanceof MemoryNotFoundError, String(error));
      assert.deepEqual([error.status, error.code], [404, "memory_not_found"]);
      return true;
    });
  }
  await client.deleteMemory(app, "ada", other.id);
  assert.deepEqual((await client.listMemories(app, "ada")).memories, []);
});

test("recall finds memories by words at once, and by meaning once they are embedded", async () => {
  const app = freshApp();
  for (const text of ["I'm vegetarian.", "My sister lives in Bergen.", "I cycle to work every day."]) {
    await client.createMemory(app, "ada", { text, topics: [text.startsWith("I") ? "me" : "family"] });
  }
  const byWords = await client.recallMemories(app, "ada", { query: "vegetarian", mode: "words" });
  assert.deepEqual(
    [byWords.recalledBy, byWords.memories.map((hit) => hit.memory.text)],
    ["words", ["I'm vegetarian."]],
  );
  assert.ok(byWords.memories[0]!.wordScore! > 0);
  assert.equal(byWords.memories[0]!.similarity, null);

  await allEmbedded();
  const status = await client.embeddingsStatus();
  assert.deepEqual([status.recall, status.pending], ["meaning+words", 0]);
  assert.equal(typeof status.model, "string");
  // Every memory, however far (minSimilarity -1): the nearest two, the best first.
  const byMeaning = await client.recallMemories(app, "ada", {
    query: "what food do I like?",
    limit: 2,
    minSimilarity: -1,
  });
  assert.equal(byMeaning.recalledBy, "meaning+words");
  assert.equal(byMeaning.note, null);
  assert.equal(byMeaning.memories.length, 2);
  const [best] = byMeaning.memories;
  assert.equal(best!.memory.text, "I'm vegetarian.", "no word of the question is in it: found by meaning");
  assert.equal(best!.memory.embedded, true);
  assert.ok(best!.similarity! > 0 && best!.score > 0 && best!.score <= 1);
  // Filters: a topic, a minimum score.
  const mine = await client.recallMemories(app, "ada", { query: "where does my family live?", topics: ["family"] });
  assert.deepEqual(mine.memories.map((hit) => hit.memory.text), ["My sister lives in Bergen."]);
  const first = await client.recallMemories(app, "ada", { query: "what food do I like?", minScore: 1, mode: "meaning" });
  assert.deepEqual(
    [first.recalledBy, first.memories.map((hit) => [hit.memory.text, hit.score])],
    ["meaning", [["I'm vegetarian.", 1]]],
    "only the first by meaning scores 1",
  );
  assert.deepEqual((await client.recallMemories(app, "bob", { query: "what food do I like?" })).memories, []);
});

test("an app's memories are every user's, revised, rolled back and deleted as a user's are", async () => {
  const app = freshApp();
  const rule = await client.createAppMemory(app, { id: "hours", text: "The shop opens at nine.", topics: ["hours"] });
  assert.deepEqual([rule.scope, rule.userId, rule.revision], ["app", null, 1]);
  await assert.rejects(client.createAppMemory(app, { id: "hours", text: "again" }), MemoryAlreadyExistsError);
  assert.deepEqual(written(await client.getAppMemory(app, "hours")), written(rule));
  await assert.rejects(client.getMemory(app, "ada", "hours"), MemoryNotFoundError, "not a user's");

  const later = await client.updateAppMemory(app, "hours", { text: "The shop opens at ten." }, { ifMatch: 1 });
  assert.equal(later.revision, 2);
  await assert.rejects(client.updateAppMemory(app, "hours", { text: "x" }, { ifMatch: 1 }), staleAt(2));
  assert.deepEqual(
    (await client.listAppMemoryRevisions(app, "hours")).revisions.map((revision) => revision.text),
    ["The shop opens at ten.", "The shop opens at nine."],
  );
  assert.deepEqual(
    (await collect(client.appMemoryRevisions(app, "hours", { pageSize: 1 }))).map((revision) => revision.revision),
    [2, 1],
  );
  const back = await client.rollBackAppMemory(app, "hours", 1, { ifMatch: later.revision });
  assert.deepEqual([back.revision, back.text], [3, "The shop opens at nine."]);
  await assert.rejects(client.rollBackAppMemory(app, "hours", 2, { ifMatch: 2 }), staleAt(3));

  await client.createAppMemory(app, { text: "Returns are free within 30 days.", topics: ["returns"] });
  assert.deepEqual(
    (await client.listAppMemories(app, { topic: "hours" })).memories.map((memory) => memory.id),
    ["hours"],
  );
  assert.equal((await collect(client.appMemories(app, { pageSize: 1 }))).length, 2);
  assert.deepEqual((await client.listMemories(app, "ada")).memories, [], "the app's are not listed as a user's");

  const recalled = await client.recallAppMemories(app, { query: "opens", mode: "words" });
  assert.deepEqual(recalled.memories.map((hit) => hit.memory.id), ["hours"]);
  // A user's recall takes in the app's, unless told not to.
  const asked = await client.recallMemories(app, "ada", { query: "opens", mode: "words" });
  assert.deepEqual(asked.memories.map((hit) => [hit.memory.id, hit.memory.scope]), [["hours", "app"]]);
  const alone = await client.recallMemories(app, "ada", { query: "opens", mode: "words", includeApp: false });
  assert.deepEqual(alone.memories, []);

  await client.deleteAppMemory(app, "hours", { ifMatch: back.revision });
  await assert.rejects(client.getAppMemory(app, "hours"), MemoryNotFoundError);
  await assert.rejects(client.deleteAppMemory(app, "hours"), MemoryNotFoundError);
  assert.equal((await client.listAppMemories(app)).memories.length, 1);
});

test("a session's user events are remembered once, and forgotten with the session", async () => {
  const app = freshApp();
  const chat = client.session(app, "ada", (await client.createSession(app, "ada")).id);
  await chat.appendEvents([
    { id: "e1", author: "user", content: { role: "user", parts: [{ text: "I'm allergic to peanuts." }] } },
    { id: "e2", author: "chef", content: { role: "model", parts: [{ text: "Noted: no peanuts." }] } },
    { id: "e3", author: "user" }, // no text: nothing to remember
  ]);
  assert.deepEqual(await chat.remember(), { remembered: 1 }, "what the user said, by default");
  assert.deepEqual(await client.rememberSession(app, "ada", chat.sessionId), { remembered: 0 }, "only what is new");
  assert.deepEqual(await chat.remember({ eventIds: ["e2"] }), { remembered: 1 }, "named events, any author's");

  const learnt = await collect(client.memories(app, "ada", { sessionId: chat.sessionId }));
  assert.deepEqual(
    learnt.map((memory) => [memory.kind, memory.text, memory.author, memory.source]).sort(),
    [
      ["event", "I'm allergic to peanuts.", "user", { sessionId: chat.sessionId, eventIds: ["e1"] }],
      ["event", "Noted: no peanuts.", "chef", { sessionId: chat.sessionId, eventIds: ["e2"] }],
    ],
  );
  const recalled = await client.recallMemories(app, "ada", { query: "peanuts", mode: "words" });
  assert.equal(recalled.memories.length, 2);

  await assert.rejects(client.rememberSession(app, "ada", "no-such-session"), SessionNotFoundError);
  await chat.delete();
  assert.deepEqual((await client.listMemories(app, "ada")).memories, [], "forgotten with their session");
  assert.deepEqual((await client.recallMemories(app, "ada", { query: "peanuts", mode: "words" })).memories, []);
});

test("a recall and a remember are resent as reads are; a memory write is sent once, with its If-Match", async () => {
  // A recall or a remember is answered at its second attempt; a write never.
  const attempts = new Map<string, number>();
  const server = await fakeServer((request, response) => {
    const n = (attempts.get(request.url) ?? 0) + 1;
    attempts.set(request.url, n);
    if (n === 1 || !/:(recall|remember)$/.test(request.url)) return problem(response, 503, "database_unavailable");
    return echo(request, response, 200);
  });
  try {
    const local = new Sessionary({ baseUrl: server.url, backoff: 1 });
    await local.recallMemories("a", "u", { query: "food" });
    await local.recallAppMemories("a", { query: "food" });
    await local.rememberSession("a", "u", "s");
    assert.deepEqual(
      server.received.map((request) => `${request.method} ${request.url}`),
      [
        "POST /apps/a/users/u/memories:recall",
        "POST /apps/a/users/u/memories:recall",
        "POST /apps/a/memories:recall",
        "POST /apps/a/memories:recall",
        "POST /apps/a/users/u/sessions/s:remember",
        "POST /apps/a/users/u/sessions/s:remember",
      ],
    );
    const writes = [
      () => local.createMemory("a", "u", { text: "x" }),
      () => local.updateMemory("a", "u", "m 1", { text: "y" }, { ifMatch: 3 }),
      () => local.rollBackAppMemory("a", "m", 1, { ifMatch: '"3"' }),
      () => local.deleteAppMemory("a", "m", { ifMatch: 3 }),
    ];
    for (const write of writes) {
      const before = server.received.length;
      await assert.rejects(write(), ServiceUnavailableError);
      assert.equal(server.received.length, before + 1, "sent once: again, it could be done twice");
    }
    const [, updated, rolledBack, deleted] = server.received.slice(-4);
    assert.deepEqual(
      [updated!.url, rolledBack!.url, deleted!.url],
      ["/apps/a/users/u/memories/m%201", "/apps/a/memories/m:rollback", "/apps/a/memories/m"],
    );
    assert.deepEqual(
      [updated!.headers["if-match"], rolledBack!.headers["if-match"], deleted!.headers["if-match"]],
      ['"3"', '"3"', '"3"'],
    );
    assert.deepEqual(JSON.parse(rolledBack!.body), { revision: 1 });
  } finally {
    server.close();
  }
});
