// This README's steps as written, in a scratch folder: the package built and packed in a copy of
// this folder, where the checkout would be, and installed in an app that `npm init -y` made.
// There the READMEs' examples and examples/typescript are type-checked, then run as this README
// says, twice in a row, against the live server at SESSIONARY_URL.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const exec = promisify(execFile);
const CLIENT = fileURLToPath(new URL("..", import.meta.url));
const README = await readFile(join(CLIENT, "README.md"), "utf8");

/** What `lines` print, run by `sh -e` in `cwd`. */
async function sh(cwd: string, lines: string): Promise<string> {
  return (await exec("sh", ["-e", "-c", lines], { cwd })).stdout;
}

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

/** The Markdown from `heading` to the next heading of its level. */
function section(markdown: string, heading: string): string {
  return markdown.split(`\n${heading}\n`)[1]!.split("\n## ")[0]!;
}

let scratch: string;
let app: string;
let tarball: string;
let runExampleTs: string; // the README's command that runs example.ts

before(async () => {
  scratch = await mkdtemp(join(tmpdir(), "sessionary-client-"));
  const checkout = join(scratch, "sessionary/clients/typescript");
  const built = /[/\\](node_modules|dist)$|\.tgz$/;
  await cp(CLIENT, checkout, { recursive: true, filter: (source) => !built.test(source) });
  app = join(scratch, "your-app");
  await mkdir(app);
  await sh(app, "npm init -y");
  const [install, running, ...more] = blocks(section(README, "## Install"), "sh");
  assert.ok(install && running && more.length === 0, "Install: the steps, then how to run an example");
  await sh(scratch, install);
  runExampleTs = running;
  tarball = join(checkout, (await readdir(checkout)).find((name) => name.endsWith(".tgz"))!);
  const compilerOptions = {
    strict: true,
    module: "nodenext",
    target: "es2022",
    lib: ["es2022", "dom"],
    noEmit: true,
  };
  await writeFile(join(app, "tsconfig.json"), JSON.stringify({ compilerOptions, include: ["*.ts"] }));
});

after(() => rm(scratch, { recursive: true, force: true }));

test("the tarball holds the built client, its types and its README", async () => {
  const packed = (await exec("tar", ["-tzf", tarball])).stdout.split("\n").map((path) => path.replace(/^package\//, ""));
  const builds = ["esm", "cjs"].flatMap((build) => [`dist/${build}/index.js`, `dist/${build}/index.d.ts`]);
  for (const file of ["package.json", "README.md", ...builds, "dist/esm/client.d.ts", "dist/cjs/package.json"]) {
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
    await readFile(join(app, "node_modules/sessionary-client/package.json"), "utf8"),
  ) as { scripts?: Record<string, string> };
  for (const script of ["preinstall", "install", "postinstall", "prepare"]) {
    assert.equal(manifest.scripts?.[script], undefined, script);
  }
});

test("require() gets the CommonJS build and import the ES module one, each with its types", async () => {
  // A `.cts` file's imports compile to require() calls, an `.mts` file's stay imports, in any
  // app. Under `node16`, tsc refuses a require() whose types are an ES module's (`nodenext`,
  // from TypeScript 5.8, allows it, as Node 22 does); `commonjs` is an older project's setting.
  const code = [
    'import { Sessionary, StaleSessionError, type Appended } from "sessionary-client";',
    'export const client: Sessionary = new Sessionary();',
    'export const stale = (error: unknown): boolean => error instanceof StaleSessionError;',
    'export const outcome = (appended: Appended): string => appended.outcome;',
  ].join("\n");
  const settings = { strict: true, target: "es2022", lib: ["es2022", "dom"], noEmit: true };
  const projects = {
    "formats.json": { compilerOptions: { ...settings, module: "node16" }, files: ["both.cts", "both.mts"] },
    "older.json": { compilerOptions: { ...settings, module: "commonjs" }, files: ["older.ts"] },
  };
  const tsc = join(CLIENT, "node_modules/typescript/bin/tsc");
  try {
    for (const name of ["both.cts", "both.mts", "older.ts"]) await writeFile(join(app, name), code);
    for (const [name, project] of Object.entries(projects)) {
      await writeFile(join(app, name), JSON.stringify(project));
      await exec(process.execPath, [tsc, "-p", join(app, name)]).catch((failed) => {
        assert.fail(`${name} does not type-check:\n${failed.stdout}`);
      });
    }
  } finally {
    for (const name of ["both.cts", "both.mts", "older.ts", ...Object.keys(projects)]) await rm(join(app, name));
  }
  // Each build runs, openapi-fetch's of the same format under it, against the live server.
  const required = await sh(
    app,
    `node -e 'const { Sessionary } = require("sessionary-client");
      new Sessionary().health().then((health) => console.log(require.resolve("sessionary-client"), health.status))'`,
  );
  assert.match(required, /[/\\]dist[/\\]cjs[/\\]index\.js ok\n$/);
  // An ES module's namespace has no `default`, which a CommonJS module's imported would have.
  const imported = await sh(
    app,
    `node --input-type=module -e 'const client = await import("sessionary-client");
      console.log("default" in client, (await new client.Sessionary().health()).status)'`,
  );
  assert.equal(imported, "false ok\n");
});

/** What `code`, saved as `name` in the app and type-checked there, prints when `command` runs
 * it, twice in a row (each run's output, which must be the same). */
async function runTwice(name: string, code: string, command: string): Promise<string> {
  await writeFile(join(app, name), code);
  try {
    await exec(process.execPath, [join(CLIENT, "node_modules/typescript/bin/tsc"), "-p", app]).catch((failed) => {
      assert.fail(`${name} does not type-check:\n${failed.stdout}\n${code}`);
    });
    const first = await sh(app, command);
    assert.equal(await sh(app, command), first, `${name} printed something else the second time`);
    return first;
  } finally {
    await rm(join(app, name));
  }
}

test("this README's examples run as written and print what it says", async () => {
  const printed = await runTwice("example.ts", blocks(README, "ts").join("\n"), runExampleTs);
  assert.equal(
    printed,
    blocks(README, "text")
      .map((output) => `${output}\n`)
      .join(""),
  );
});

test("the repository README's TypeScript example runs as written", async () => {
  const readme = await readFile(join(CLIENT, "../../README.md"), "utf8");
  const [example] = blocks(readme, "ts");
  assert.ok(example?.includes("sessionary-client"), "the README has a TypeScript example");
  // It names its server: the one at SESSIONARY_URL, here.
  const here = example!.replaceAll("http://127.0.0.1:8000", process.env.SESSIONARY_URL!);
  assert.equal(await runTwice("example.ts", here, runExampleTs), "1 user\n"); // what its comment says
});

test("the TypeScript examples run as their comments say and print what they say", async () => {
  const folder = join(CLIENT, "../../examples/typescript");
  const files = (await readdir(folder)).filter((name) => name.endsWith(".ts"));
  assert.ok(files.length > 0, "examples/typescript holds examples");
  for (const name of files) {
    const code = await readFile(join(folder, name), "utf8");
    // In its opening comment, the blocks of ` *   line`s: how to run it, then what it prints.
    const indented = code
      .split("*/")[0]!
      .split(/\n \*\n/)
      .filter((paragraph) => /^ \* {3}/.test(paragraph))
      .map((paragraph) => `${paragraph.replace(/^ \* {3}/gm, "").trimEnd()}\n`);
    assert.equal(indented.length, 2, `${name} says how to run it, then what it prints`);
    assert.equal(await runTwice(name, code, indented[0]!), indented[1], name);
  }
});
