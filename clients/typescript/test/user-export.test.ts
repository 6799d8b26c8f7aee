// A user's export and its import under another user, through `Sessionary` (the built
// dist/esm/) against the live server at SESSIONARY_URL: the export streamed into the import,
// what the import counted, the session and the memory read back.
import assert from "node:assert/strict";
import { test } from "node:test";

import { SessionAlreadyExistsError, Sessionary } from "../dist/esm/index.js";
import { freshApp } from "./helpers.ts";

const client = new Sessionary();
const COUNTS = { sessions: 1, events: 1, memories: 1, artifactVersions: 0 };
const NOTHING = { sessions: 0, events: 0, memories: 0, artifactVersions: 0 };

test("a user exported is imported under another user, the export streamed into the import", async () => {
  const app = freshApp();
  await client.createSession(app, "ada", {
    sessionId: "chat",
    events: [{ id: "e1", author: "user", invocationId: "inv-1", timestamp: 1 }],
  });
  await client.createMemory(app, "ada", { id: "tea", text: "Ada takes her tea black." });
  await client.updateUserState(app, "ada", { units: "metric" });

  const imported = await client.importUser(app, "bob", await client.exportUser(app, "ada"));
  assert.deepEqual(imported, { created: COUNTS, unchanged: NOTHING, userStateKeys: 1 });

  const session = await client.getSession(app, "bob", "chat");
  assert.equal(session.userId, "bob");
  assert.deepEqual(session.events.map((event) => event.id), ["e1"]);
  assert.equal((await client.getMemory(app, "bob", "tea")).text, "Ada takes her tea black.");
  assert.deepEqual(await client.getUserState(app, "bob"), { units: "metric" });

  // Read whole, it is NDJSON, which the import takes as bytes too: again, it creates nothing.
  const ndjson = await new Response(await client.exportUser(app, "ada")).text();
  const formats = ndjson.trimEnd().split("\n").map((line) => JSON.parse(line).format ?? null);
  assert.deepEqual(formats, ["sessionary.userState.v1", "sessionary.session.v1", null, "sessionary.memory.v1"]);
  const again = await client.importUser(app, "bob", ndjson);
  assert.deepEqual(again, { created: NOTHING, unchanged: COUNTS, userStateKeys: 1 });

  assert.equal(await new Response(await client.exportUser(app, "nobody")).text(), "");
  // The same session id, different (an event more): nothing is imported.
  await client.appendEvent(app, "ada", "chat", { id: "e2", author: "user", invocationId: "inv-2" });
  await assert.rejects(
    client.importUser(app, "bob", await client.exportUser(app, "ada")),
    SessionAlreadyExistsError,
  );
});
