// Erasing a user, and an app, through `Sessionary` (the built dist/esm/) against the live
// server at SESSIONARY_URL, which runs with keys off, so that any caller may erase; and a 202
// (an erase still running) against a local server.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  AppErasingError,
  ConflictError,
  ErasureNotFoundError,
  NotFoundError,
  SessionNotFoundError,
  Sessionary,
  UserErasingError,
} from "../dist/esm/index.js";
import { fakeServer, freshApp, problem } from "./helpers.ts";

const client = new Sessionary();

test("a user is erased: their session goes, and the erasure can be read again", async () => {
  const app = freshApp();
  const started = Date.now() / 1000;
  await client.createSession(app, "ada", { sessionId: "chat" });
  await client.appendEvent(app, "ada", "chat", {
    author: "user",
    content: { role: "user", parts: [{ text: "Forget me." }] },
  });
  await client.createSession(app, "bob", { sessionId: "chat" });

  const erasure = await client.eraseUser(app, "ada");
  assert.deepEqual([erasure.appName, erasure.userId, erasure.status], [app, "ada", "done"]);
  assert.equal(erasure.removed.sessions, 1);
  assert.ok((erasure.removed.events ?? 0) >= 1, JSON.stringify(erasure.removed));
  assert.deepEqual(erasure.deletedKeyIds, []);
  assert.equal(typeof erasure.id, "string");
  assert.ok(Math.abs(erasure.createTime - started) < 60, String(erasure.createTime));
  assert.ok(erasure.finishTime !== null && erasure.finishTime >= erasure.createTime);

  await assert.rejects(client.getSession(app, "ada", "chat"), SessionNotFoundError);
  // Another user of the app keeps what is theirs.
  assert.equal((await client.getSession(app, "bob", "chat")).id, "chat");

  const read = await client.getErasure(app, "ada");
  assert.equal(read.id, erasure.id);
  assert.deepEqual([read.status, read.removed.sessions], ["done", 1]);
});

test("the erasure of a user never erased is not found", async () => {
  await assert.rejects(client.getErasure(freshApp(), "ada"), (error: unknown) => {
    assert.ok(error instanceof ErasureNotFoundError, String(error));
    assert.ok(error instanceof NotFoundError);
    assert.deepEqual([error.status, error.code], [404, "erasure_not_found"]);
    return true;
  });
});

test("an erase still running (202) answers its erasure; a write meanwhile is UserErasingError", async () => {
  const running = {
    id: "e1",
    appName: "app",
    userId: "ada",
    status: "running",
    removed: { sessions: 3 },
    deletedKeyIds: [],
    createTime: 1,
    updateTime: 2,
    finishTime: null,
  };
  const server = await fakeServer((request, response) => {
    if (request.method === "DELETE") {
      response.writeHead(202, { "Content-Type": "application/json", Location: `${request.url}/erasure` });
      response.end(JSON.stringify(running));
    } else {
      problem(response, 409, "user_erasing");
    }
  });
  try {
    const local = new Sessionary({ baseUrl: server.url, retries: 0 });
    assert.deepEqual(await local.eraseUser("app", "ada"), running);
    assert.deepEqual(
      server.received.map(({ method, url }) => [method, url]),
      [["DELETE", "/apps/app/users/ada"]],
    );
    await assert.rejects(local.createSession("app", "ada"), (error: unknown) => {
      assert.ok(error instanceof UserErasingError, String(error));
      assert.ok(error instanceof ConflictError);
      return true;
    });
  } finally {
    server.close();
  }
});

test("an app is erased: every user's sessions and its state go, and the erasure can be read again", async () => {
  const app = freshApp();
  await assert.rejects(client.getAppErasure(app), ErasureNotFoundError);
  await client.createSession(app, "ada", { sessionId: "chat" });
  await client.createSession(app, "bob", { sessionId: "chat" });
  await client.updateAppState(app, { banner: "hi" });

  const erasure = await client.eraseApp(app);
  assert.deepEqual([erasure.appName, erasure.status], [app, "done"]);
  assert.ok(!("userId" in erasure), JSON.stringify(erasure));
  assert.deepEqual([erasure.removed.sessions, erasure.removed.appStates], [2, 1]);
  assert.ok(erasure.finishTime !== null && erasure.finishTime >= erasure.createTime);

  await assert.rejects(client.getSession(app, "bob", "chat"), SessionNotFoundError);
  assert.deepEqual(await client.getAppState(app), {});
  assert.deepEqual(await client.getAppErasure(app), erasure);
});

test("an app erase still running (202) answers its erasure; a write meanwhile is AppErasingError", async () => {
  const running = {
    id: "e2",
    appName: "app",
    status: "running",
    removed: { sessions: 3 },
    deletedKeyIds: [],
    createTime: 1,
    updateTime: 2,
    finishTime: null,
  };
  const server = await fakeServer((request, response) => {
    if (request.method === "DELETE") {
      response.writeHead(202, { "Content-Type": "application/json", Location: `${request.url}/erasure` });
      response.end(JSON.stringify(running));
    } else {
      problem(response, 409, "app_erasing");
    }
  });
  try {
    const local = new Sessionary({ baseUrl: server.url, retries: 0 });
    assert.deepEqual(await local.eraseApp("app"), running);
    assert.deepEqual(
      server.received.map(({ method, url }) => [method, url]),
      [["DELETE", "/apps/app"]],
    );
    await assert.rejects(local.updateAppState("app", { k: 1 }), (error: unknown) => {
      assert.ok(error instanceof AppErasingError, String(error));
      assert.ok(error instanceof ConflictError);
      return true;
    });
  } finally {
    server.close();
  }
});
