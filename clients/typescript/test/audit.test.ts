// The audit log through `Sessionary` (the built dist/esm/) against the live server at
// SESSIONARY_URL, which runs with keys off: /audit is open, and a record names no key.
import assert from "node:assert/strict";
import { test } from "node:test";

import { InvalidRequestError, Sessionary } from "../dist/esm/index.js";
import { freshApp } from "./helpers.ts";

const client = new Sessionary();

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const item of items) all.push(item);
  return all;
}

test("a session delete is recorded by pseudonyms and found by its user, action and time", async () => {
  const app = freshApp();
  const started = Date.now() / 1000;
  await client.createSession(app, "ada", { sessionId: "private-chat" });
  await client.deleteSession(app, "ada", "private-chat");

  const page = await client.listAuditRecords({ app, userId: "ada", action: "session.delete" });
  assert.equal(page.nextPageToken, null);
  assert.equal(page.records.length, 1);
  const [record] = page.records;
  assert.deepEqual(
    [record!.action, record!.keyId, record!.appName, record!.outcome],
    ["session.delete", null, app, "ok"],
  );
  assert.ok(Math.abs(record!.time - started) < 60, String(record!.time));
  // The user and the session are named by keyed hashes, never by their ids.
  assert.equal(typeof record!.user, "string");
  assert.match(record!.user!, /^[0-9a-f]{32}$/); // a hash, which "ada" may be part of by chance
  assert.equal(typeof record!.detail.session, "string");
  assert.ok(!JSON.stringify(record).includes("private-chat"));

  assert.deepEqual(await collect(client.auditRecords({ app })), [record]);
  assert.deepEqual((await client.listAuditRecords({ app, userId: "bob" })).records, []);
  assert.deepEqual((await client.listAuditRecords({ app, afterTimestamp: started - 60 })).records, [record]);
  assert.deepEqual((await client.listAuditRecords({ app, beforeTimestamp: started - 60 })).records, []);
});

test("audit records are paged newest first", async () => {
  const app = freshApp();
  for (const sessionId of ["s1", "s2", "s3"]) {
    await client.createSession(app, "ada", { sessionId });
    await client.deleteSession(app, "ada", sessionId);
  }
  const first = await client.listAuditRecords({ app, pageSize: 2 });
  assert.equal(first.records.length, 2);
  assert.equal(typeof first.nextPageToken, "string");
  const rest = await client.listAuditRecords({ app, pageSize: 2, pageToken: first.nextPageToken! });
  assert.deepEqual([rest.records.length, rest.nextPageToken], [1, null]);
  const seqs = [...first.records, ...rest.records].map((record) => record.seq);
  assert.deepEqual(seqs, [...seqs].sort((a, b) => b - a));
  const every = await collect(client.auditRecords({ app, pageSize: 1 }));
  assert.deepEqual(
    every.map((record) => record.seq),
    seqs,
  );
});

test("a user asked for without an app is refused", async () => {
  await assert.rejects(client.listAuditRecords({ userId: "ada" }), (error: unknown) => {
    assert.ok(error instanceof InvalidRequestError, String(error));
    assert.deepEqual([error.status, error.code], [422, "validation_error"]);
    return true;
  });
});
