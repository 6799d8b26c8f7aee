// The package as `npm pack` makes it, installed in a scratch directory as a user would install
// it, and the READMEs' examples type-checked and run from there, as written, against the live
// server at SESSIONARY_URL.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);
const CLIENT = fileURLToPath(new URL("..", import.meta.url));
// The npm running `npm test`, else the one on the PATH.
const NPM = process.env.npm_execpath ? [process.execPath, process.env.npm_execpath] : ["npm"];

function npm(cwd: string, ...args: string[]) {
  const [command, ...first] = NPM;
  return run(command!, [...first, ...args], { cwd });
}

let scratch: string;
let packed: string[];

before(async () => {
  scratch = await mkdtemp(join(tmpdir(), "sessionary-client-"));
  // `npm test` has just built dist/: packing without scripts does not rebuild it under the
  // other test files' feet.
  const { stdout } = await npm(CLIENT, "pack", "--ignore-scripts", "--json", "--pack-destination", scratch);
  const [tarball] = JSON.parse(stdout) as { filename: string; files: { path: string }[] }[];
  packed = tarball!.files.map((file) => file.path);
  await writeFile(
    join(scratch, "package.json"),
    JSON.stringify({ name: "example", private: true, type: "module" }),
  );
  // Its one dependency comes from npm's cache, where `npm ci` put it.
  await npm(
    scratch,
    "install",
    "--prefer-offline",
    "--no-audit",
    "--no-fund",
    join(scratch, tarball!.filename),
  );
  const compilerOptions = {
    strict: true,
    module: "nodenext",
    target: "es2022",
    lib: ["es2022", "dom"],
    noEmit: true,
  };
  await writeFile(join(scratch, "tsconfig.json"), JSON.stringify({ compilerOptions, include: ["*.ts"] }));
});

after(() => rm(scratch, { recursive: true, force: true }));

test("the tarball holds the built client, its types and its README", () => {
  for (const file of ["package.json", "README.md", "dist/index.js", "dist/index.d.ts", "dist/client.d.ts"]) {
    assert.ok(packed.includes(file), file);
  }
  assert.ok(
    !packed.some((file) => file.startsWith("test/") || file.startsWith("node_modules/")),
    packed.join(),
  );
});

test("the installed package runs no script of its own on install", async () => {
  // npm warns of each when it installs the tarball, asking the app to allow or refuse it.
  const manifest = JSON.parse(
    await readFile(join(scratch, "node_modules/sessionary-client/package.json"), "utf8"),
  ) as { scripts?: Record<string, string> };
  for (const script of ["preinstall", "install", "postinstall", "prepare"]) {
    assert.equal(manifest.scripts?.[script], undefined, script);
  }
});

/** The blocks of `language` in a Markdown text, unindented. */
function blocks(markdown: string, language: string): string[] {
  const fence = new RegExp(`^( *)\`\`\`${language}\\n([\\s\\S]*?)\\n *\`\`\`$`, "gm");
  return [...markdown.matchAll(fence)].map(([, indent, code]) => {
    return code!
      .split("\n")
      .map((line) => line.slice(indent!.length))
      .join("\n");
  });
}

/** Runs `code` as a file of the scratch project, type-checked first; what it printed. */
async function runExample(code: string): Promise<string> {
  const example = code
    .replaceAll("http://127.0.0.1:8000", process.env.SESSIONARY_URL!)
    .replaceAll("weather-bot", `weather-bot-${randomUUID().slice(0, 8)}`);
  await rm(join(scratch, "example.ts"), { force: true });
  await writeFile(join(scratch, "example.ts"), example);
  await run(process.execPath, [join(CLIENT, "node_modules/typescript/bin/tsc"), "-p", scratch]).catch(
    (failed) => {
      assert.fail(`the example does not type-check:\n${failed.stdout}\n${example}`);
    },
  );
  const { stdout } = await run(process.execPath, ["example.ts"], { cwd: scratch });
  return stdout;
}

test("this README's examples run as written and print what it says", async () => {
  const readme = await readFile(join(CLIENT, "README.md"), "utf8");
  const printed = await runExample(blocks(readme, "ts").join("\n"));
  assert.equal(
    printed,
    blocks(readme, "text")
      .map((output) => `${output}\n`)
      .join(""),
  );
});

test("the repository README's TypeScript example runs as written", async () => {
  const readme = await readFile(join(CLIENT, "../../README.md"), "utf8");
  const [example] = blocks(readme, "ts");
  assert.ok(example?.includes("sessionary-client"), "the README has a TypeScript example");
  assert.equal(await runExample(example!), "1 user\n"); // what its comment says it prints
});

test("the TypeScript examples run as written and print what their comments say", async () => {
  const folder = join(CLIENT, "../../examples/typescript");
  const files = (await readdir(folder)).filter((name) => name.endsWith(".ts"));
  assert.ok(files.length > 0, "examples/typescript holds examples");
  for (const name of files) {
    const code = await readFile(join(folder, name), "utf8");
    // The lines after "It prints:" in its opening comment, each ` *   line`.
    const said = code.split("*/")[0]!.split("It prints:")[1] ?? "";
    const expected = [...said.matchAll(/^ \* {3}(.*)$/gm)].map(([, line]) => `${line}\n`).join("");
    assert.ok(expected, `${name} says what it prints`);
    assert.equal(await runExample(code), expected, name);
  }
});
