// The artifact methods of `Sessionary` (the built dist/esm/) against the live server at
// SESSIONARY_URL, in a session and in its user's own names; how uploads are sent, against
// local servers.
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { createReadStream } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

import {
  APIConnectionError,
  APIError,
  APITimeoutError,
  ArtifactNotFoundError,
  InvalidRequestError,
  RangeNotSatisfiableError,
  Sessionary,
  type ArtifactVersion,
} from "../dist/esm/index.js";
import { fakeServer, freshApp, refusedUrl } from "./helpers.ts";

const client = new Sessionary();
const MiB = 1 << 20;

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const item of items) all.push(item);
  return all;
}

function sha256(bytes: Uint8Array | string): string {
  return createHash("sha256").update(bytes).digest("hex");
}

async function newSession() {
  const app = freshApp();
  return client.session(app, "ada", (await client.createSession(app, "ada")).id);
}

test("artifacts are uploaded, listed, read by version, downloaded and deleted, in a session and its user's", async () => {
  const chat = await newSession();
  const { appName: app } = chat;
  const csv = "city,rain\nBergen,9\n";
  const first = await chat.uploadArtifact("reports/q1.csv", csv, {
    mimeType: "text/csv",
    customMetadata: { source: "Zoë ☂", rows: 1 }, // not ASCII: sent as `\u` escapes
    displayName: "Q1",
  });
  assert.deepEqual(
    [first.name, first.version, first.mimeType, first.kind, first.size, first.sha256, first.displayName],
    ["reports/q1.csv", 0, "text/csv", "bytes", csv.length, sha256(csv), "Q1"],
  );
  assert.deepEqual(first.customMetadata, { source: "Zoë ☂", rows: 1 });
  assert.equal(
    first.canonicalUri,
    `artifact://apps/${app}/users/ada/sessions/${chat.sessionId}/artifacts/reports/q1.csv/versions/0`,
  );
  const bytes = new Uint8Array([0, 1, 2, 253, 254, 255]);
  const second = await chat.uploadArtifact("reports/q1.csv", bytes);
  assert.deepEqual([second.version, second.mimeType, second.sha256], [1, "application/octet-stream", sha256(bytes)]);
  const picture = await chat.uploadArtifact("chart.png", new Blob([bytes], { type: "image/png" }));
  assert.equal(picture.mimeType, "image/png", "a Blob's own type");
  assert.equal((await chat.uploadArtifact("raw.bin", bytes.buffer)).size, 6);
  // Without a session: the user's own names, which every session of the user sees.
  const avatar = await client.uploadArtifact(app, "ada", null, "user:avatar.png", bytes, { mimeType: "image/png" });
  assert.equal(avatar.canonicalUri, `artifact://apps/${app}/users/ada/artifacts/user:avatar.png/versions/0`);
  await assert.rejects(client.uploadArtifact(app, "ada", null, "notes.txt", "x"), InvalidRequestError);

  const names = (page: { artifacts: ArtifactVersion[] }) => page.artifacts.map((artifact) => artifact.name);
  assert.deepEqual(names(await chat.listArtifacts()), ["chart.png", "raw.bin", "reports/q1.csv", "user:avatar.png"]);
  assert.deepEqual(names(await client.listArtifacts(app, "ada", null)), ["user:avatar.png"]);
  const onePage = await chat.listArtifacts({ pageSize: 1 });
  assert.deepEqual([names(onePage), typeof onePage.nextPageToken], [["chart.png"], "string"]);
  const every = await collect(chat.artifacts({ pageSize: 3 }));
  assert.deepEqual(
    every.map((artifact) => [artifact.name, artifact.version]),
    [["chart.png", 0], ["raw.bin", 0], ["reports/q1.csv", 1], ["user:avatar.png", 0]],
  );
  assert.equal((await collect(client.artifacts(app, "ada", null))).length, 1);

  const versions = await chat.listArtifactVersions("reports/q1.csv", { pageSize: 1 });
  assert.deepEqual(versions.versions.map((version) => version.version), [0]);
  assert.ok(versions.nextPageToken);
  assert.deepEqual(
    (await collect(chat.artifactVersions("reports/q1.csv", { pageSize: 1 }))).map((version) => version.sha256),
    [sha256(csv), sha256(bytes)],
  );
  assert.deepEqual(
    (await collect(client.artifactVersions(app, "ada", null, "user:avatar.png"))).map((version) => version.version),
    [0],
  );
  assert.deepEqual(await chat.getArtifactVersion("reports/q1.csv"), second);
  assert.deepEqual(await chat.getArtifactVersion("reports/q1.csv", { version: 0 }), first);
  assert.deepEqual(await chat.getArtifactVersion("reports/q1.csv", { version: "latest" }), second);
  assert.deepEqual(await client.getArtifactVersion(app, "ada", null, "user:avatar.png"), avatar);

  const newest = await chat.downloadArtifact("reports/q1.csv");
  assert.deepEqual(
    [newest.data, newest.version, newest.mimeType, newest.sha256, newest.range, newest.fileUri],
    [bytes, 1, "application/octet-stream", sha256(bytes), null, null],
  );
  const older = await chat.downloadArtifact("reports/q1.csv", { version: 0 });
  assert.deepEqual([new TextDecoder().decode(older.data), older.version, older.mimeType], [csv, 0, "text/csv"]);
  assert.deepEqual((await client.downloadArtifact(app, "ada", null, "user:avatar.png")).data, bytes);
  assert.deepEqual((await chat.downloadArtifact("user:avatar.png")).data, bytes, "seen through the session too");

  await chat.deleteArtifact("reports/q1.csv");
  for (const gone of [
    () => chat.getArtifactVersion("reports/q1.csv"),
    () => chat.downloadArtifact("reports/q1.csv"),
    () => chat.listArtifactVersions("reports/q1.csv"),
    () => chat.deleteArtifact("reports/q1.csv"),
  ]) {
    await assert.rejects(gone(), (error: unknown) => {
      return error instanceof ArtifactNotFoundError && error.status === 404 && error.code === "artifact_not_found";
    });
  }
  assert.equal((await chat.uploadArtifact("reports/q1.csv", csv)).version, 0, "a name saved again starts at 0");
  await client.deleteArtifact(app, "ada", null, "user:avatar.png");
  assert.deepEqual(names(await client.listArtifacts(app, "ada", null)), []);
});

test("ADK's JSON form saves bytes, text and references; a reference downloads as its URI", async () => {
  const chat = await newSession();
  const { appName: app } = chat;
  const image = new Uint8Array([137, 80, 78, 71]);
  const inline = await chat.saveArtifact(
    "logo.png",
    { inlineData: { data: Buffer.from(image).toString("base64"), mimeType: "image/png", displayName: "Logo" } },
    { customMetadata: { by: "designer" } },
  );
  assert.deepEqual(
    [inline.kind, inline.mimeType, inline.displayName, inline.customMetadata],
    ["bytes", "image/png", "Logo", { by: "designer" }],
  );
  assert.deepEqual((await chat.downloadArtifact("logo.png")).data, image);
  const text = await chat.saveArtifact("notes.md", { text: "# Bergen ☂" });
  assert.deepEqual([text.kind, text.mimeType], ["text", "text/plain"]);
  const notes = await chat.downloadArtifact("notes.md");
  assert.deepEqual([new TextDecoder().decode(notes.data), notes.mimeType], ["# Bergen ☂", "text/plain; charset=utf-8"]);

  const uri = "https://example.com/forecast.pdf";
  const reference = await client.saveArtifact(app, "ada", null, "user:forecast", { fileData: { fileUri: uri } });
  assert.deepEqual([reference.kind, reference.fileUri, reference.sha256], ["reference", uri, null]);
  assert.deepEqual(await chat.downloadArtifact("user:forecast"), {
    data: new Uint8Array(),
    mimeType: null,
    version: 0,
    sha256: null,
    range: null,
    fileUri: uri,
  });
  const answer = await client.openArtifact(app, "ada", null, "user:forecast");
  assert.deepEqual([answer.status, answer.headers.get("Location")], [303, uri]);
  // An `artifact://` reference is followed by the server: its content downloads.
  await chat.saveArtifact("logo-again.png", { fileData: { fileUri: inline.canonicalUri } });
  assert.deepEqual((await chat.downloadArtifact("logo-again.png")).data, image);
});

test("a range downloads those bytes; one past the end is a RangeNotSatisfiableError", async () => {
  const chat = await newSession();
  const text = "0123456789";
  await chat.uploadArtifact("digits.txt", text);
  const part = await chat.downloadArtifact("digits.txt", { range: { start: 2, end: 5 } });
  assert.deepEqual([new TextDecoder().decode(part.data), part.range], ["2345", { start: 2, end: 5, size: 10 }]);
  assert.equal(new TextDecoder().decode((await chat.downloadArtifact("digits.txt", { range: { start: 7 } })).data), "789");
  assert.equal(new TextDecoder().decode((await chat.downloadArtifact("digits.txt", { range: { last: 3 } })).data), "789");
  const answer = await chat.openArtifact("digits.txt", { range: { start: 8 } });
  assert.deepEqual([answer.status, answer.headers.get("Content-Range"), await answer.text()], [206, "bytes 8-9/10", "89"]);
  await assert.rejects(chat.downloadArtifact("digits.txt", { range: { start: 10 } }), (error: unknown) => {
    return (
      error instanceof RangeNotSatisfiableError &&
      error instanceof APIError &&
      error.status === 416 &&
      error.code === "range_not_satisfiable" &&
      error.size === 10
    );
  });
});

test("megabytes are uploaded from streams and downloaded as one", async () => {
  const chat = await newSession();
  // 12 MiB from a ReadableStream, in pieces of 256 KiB, hashed as they are made.
  const hash = createHash("sha256");
  let made = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (made === 12 * MiB) return controller.close();
      const piece = randomBytes(MiB / 4);
      hash.update(piece);
      made += piece.length;
      controller.enqueue(piece);
    },
  });
  const big = await chat.uploadArtifact("big.bin", stream, { timeout: 60_000 });
  assert.deepEqual([big.size, big.sha256], [12 * MiB, hash.digest("hex")]);

  // Read as it arrives: more than one piece, as many bytes as the record says, the same hash.
  const answer = await chat.openArtifact("big.bin");
  assert.deepEqual(
    [answer.status, answer.headers.get("Content-Length"), answer.headers.get("ETag")],
    [200, String(12 * MiB), `"${big.sha256}"`],
  );
  const received = createHash("sha256");
  let pieces = 0;
  let length = 0;
  for await (const piece of answer.body as unknown as AsyncIterable<Uint8Array>) {
    received.update(piece);
    length += piece.length;
    pieces++;
  }
  assert.deepEqual([length, received.digest("hex")], [12 * MiB, big.sha256]);
  assert.ok(pieces > 1, `${pieces} piece`);
  const whole = await chat.downloadArtifact("big.bin");
  assert.deepEqual([whole.data.length, sha256(whole.data)], [12 * MiB, big.sha256]);
  // A range across the server's 1 MiB chunks.
  const across = await chat.downloadArtifact("big.bin", { range: { start: MiB - 10, end: MiB + 9 } });
  assert.deepEqual(across.data, whole.data.subarray(MiB - 10, MiB + 10));

  // A file, as Node streams it (an async iterable of Buffers); and an async generator.
  const folder = await mkdtemp(join(tmpdir(), "sessionary-artifacts-"));
  try {
    const file = join(folder, "report.bin");
    const content = randomBytes(5 * MiB + 3);
    await writeFile(file, content);
    const fromFile = await client.uploadArtifact(chat.appName, "ada", null, "user:report.bin", createReadStream(file));
    assert.deepEqual([fromFile.size, fromFile.sha256], [content.length, sha256(content)]);
    async function* generated() {
      for (let n = 0; n < 3; n++) yield content.subarray(n * MiB, (n + 1) * MiB);
    }
    assert.equal((await chat.uploadArtifact("generated.bin", generated())).sha256, sha256(content.subarray(0, 3 * MiB)));
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
});

test("a name's dot segment is refused before it is sent; its `/`s and `user:` are not encoded away", async () => {
  const chat = await newSession();
  for (const name of ["..", "reports/../q1.csv", "reports/./q1.csv"]) {
    await assert.rejects(chat.downloadArtifact(name), (error: unknown) => {
      return error instanceof InvalidRequestError && /^path\.name: .*\(not sent\)$/.test(error.detail);
    });
  }
  const seen: string[] = [];
  const watched = new Sessionary({
    fetch: (request: Request) => {
      seen.push(new URL(request.url).pathname);
      return fetch(request);
    },
  });
  await watched.uploadArtifact(chat.appName, "ada", null, "user:a b/c?.txt", "x");
  assert.equal(seen[0], `/apps/${chat.appName}/users/ada/artifacts/user%3Aa%20b/c%3F.txt`);
  assert.equal((await watched.getArtifactVersion(chat.appName, "ada", chat.sessionId, "user:a b/c?.txt")).size, 1);
});

// --- How an upload is sent ----------------------------------------------------------------

/** Pieces of `size` bytes, `count` of them, one every `every` ms. */
async function* slowly(count: number, size: number, every: number): AsyncGenerator<Uint8Array> {
  for (let n = 0; n < count; n++) {
    await new Promise((resolve) => setTimeout(resolve, every));
    yield new Uint8Array(size).fill(n);
  }
}

test("an upload's timeout counts from its last byte, since its answer begins only then", async () => {
  let answers = true;
  const server = await fakeServer((request, response) => {
    if (!answers) return; // never answers
    response.writeHead(201, { "Content-Type": "application/json" });
    response.end(JSON.stringify({ received: request.body.length }));
  });
  try {
    const slow = new Sessionary({ baseUrl: server.url, timeout: 200 });
    // Longer to send than the timeout: answered all the same.
    const sent = await slow.uploadArtifact("a", "u", "s", "slow.bin", slowly(5, 10, 100));
    assert.deepEqual(sent, { received: 50 });
    assert.deepEqual(await slow.uploadArtifact("a", "u", "s", "bytes.bin", new Uint8Array(3 * MiB)), {
      received: 3 * MiB,
    });
    answers = false;
    const started = Date.now();
    await assert.rejects(slow.uploadArtifact("a", "u", "s", "slow.bin", slowly(3, 10, 100)), APITimeoutError);
    const waited = Date.now() - started;
    assert.ok(waited >= 500 && waited < 2000, `${waited} ms: 300 to send, then 200`);
    const sentHeaders = server.received[0]!.headers;
    assert.equal(sentHeaders["content-type"], "application/octet-stream");
  } finally {
    server.close();
  }
});

test("bytes are sent again when the connection was refused; a stream, read as it is sent, once", async () => {
  let attempts = 0;
  const refused = new Sessionary({
    baseUrl: await refusedUrl(),
    retries: 2,
    backoff: 10,
    fetch: (request: Request) => {
      attempts++;
      return fetch(request);
    },
  });
  await assert.rejects(refused.uploadArtifact("a", "u", "s", "b.bin", new Uint8Array(10)), APIConnectionError);
  assert.equal(attempts, 3);
  attempts = 0;
  await assert.rejects(refused.uploadArtifact("a", "u", "s", "b.bin", slowly(2, 10, 1)), APIConnectionError);
  assert.equal(attempts, 1);
});

test("a stream that fails fails its upload with its own error", async () => {
  const server = await fakeServer((_request, response) => response.end());
  try {
    const broken = new Error("the disk went away");
    async function* failing() {
      yield new Uint8Array(10);
      throw broken;
    }
    await assert.rejects(
      new Sessionary({ baseUrl: server.url }).uploadArtifact("a", "u", "s", "f.bin", failing()),
      (error: unknown) => error === broken,
    );
  } finally {
    server.close();
  }
});
