// The client has what the spec names, as src/spec.gen.ts lists it (clients/generate.py): a
// class for each problem code, which an answer with that code throws, and for each operation
// the method of `Sessionary` that docs/clients.md's table names.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { test } from "node:test";

import { Sessionary } from "../src/client.ts";
import * as errors from "../src/errors.ts";
import { ERROR_CLASSES, OPERATIONS } from "../src/spec.gen.ts";

/** Each operationId with the method the table's TypeScript column names ("" for none). */
async function typescriptMethods(): Promise<Map<string, string>> {
  const table = await readFile(new URL("../../../docs/clients.md", import.meta.url), "utf8");
  const lines = table.split("\n");
  const header = lines.findIndex((line) => line.startsWith("| Operation |"));
  const column = lines[header]!.split("|").map((cell) => cell.trim()).indexOf("TypeScript");
  const named = new Map<string, string>();
  for (const line of lines.slice(header + 2)) {
    if (!line.startsWith("|")) break;
    const cells = line.split("|").map((cell) => /`([^`]+)`/.exec(cell)?.[1] ?? "");
    named.set(cells[1]!, cells[column]!);
  }
  return named;
}

test("each problem code throws its own class", async () => {
  const classes = errors as Record<string, unknown>;
  const lacking = [];
  for (const [code, name] of Object.entries(ERROR_CLASSES)) {
    const kind = classes[name];
    if (typeof kind !== "function" || !(kind.prototype instanceof errors.APIError)) {
      lacking.push(`${code} (${name})`);
      continue;
    }
    // 418: a status with no class of its own, which would stand in for `http_error`'s
    const answer = new Response(JSON.stringify({ code, detail: "d" }), { status: 418 });
    assert.equal((await errors.errorFor(answer)).constructor, kind, code);
  }
  assert.deepEqual(lacking, [], "the spec's codes that errors.ts has no class for");
});

test("each operation has a method", async () => {
  const methods = await typescriptMethods();
  const client = Sessionary.prototype as unknown as Record<string, unknown>;
  const lacking = [];
  for (const { operationId, method, path } of OPERATIONS) {
    const name = methods.get(operationId);
    if (!name || typeof client[name] !== "function") {
      lacking.push(`${method} ${path} (${operationId}): ${name || "docs/clients.md names none"}`);
    }
  }
  assert.deepEqual(lacking, [], "the spec's operations that the client has no method for");
});
