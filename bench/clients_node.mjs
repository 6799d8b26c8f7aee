// S17's Node rows (run by bench/clients.py): the TypeScript client against a raw `fetch` loop
// on the same server in the same run. Prints one JSON object: events/s and the process's CPU
// per append of 32 concurrent tasks appending, then the median ms of a whole read of a session.
//
//   node bench/clients_node.mjs BASE_URL APPENDS READ_EVENTS
import { randomUUID } from "node:crypto";
import { Sessionary } from "../clients/typescript/dist/index.js";

const [baseUrl, appendsArg, readEventsArg] = process.argv.slice(2);
const APPENDS = Number(appendsArg);
const READ_EVENTS = Number(readEventsArg);
const TASKS = 32;
const TEXT = "Sunny in Oslo, up to 21 degrees, with a light breeze from the west. ".repeat(3);

const event = (n) => ({
  author: "weather_agent",
  invocationId: `inv-${n >> 1}`,
  content: { role: "model", parts: [{ text: TEXT }] },
  actions: { stateDelta: { turn: n, last_city: "Oslo" } },
});

const client = new Sessionary({ baseUrl });
const path = (app, user, session) =>
  `${baseUrl}/apps/${app}/users/${user}/sessions/${session}`;

async function timed(work, count) {
  const began = performance.now();
  const spent = process.cpuUsage();
  await work();
  const used = process.cpuUsage(spent);
  const seconds = (performance.now() - began) / 1000;
  return { eventsPerSecond: count / seconds, cpuMsPerEvent: (used.user + used.system) / 1000 / count };
}

async function appends(append) {
  const app = `s17-node-${randomUUID().slice(0, 6)}`;
  for (let n = 0; n < TASKS; n++) await client.createSession(app, `u${n}`, { sessionId: "s" });
  const task = async (n) => {
    for (let i = 0; i < APPENDS; i++) await append(app, `u${n}`, "s", event(i));
  };
  return timed(() => Promise.all(Array.from({ length: TASKS }, (_, n) => task(n))), TASKS * APPENDS);
}

async function rawAppend(app, user, session, body) {
  const answer = await fetch(`${path(app, user, session)}/events`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ ...body, id: randomUUID() }),
  });
  if (answer.status !== 201) throw new Error(`append: ${answer.status}`);
  return answer.json();
}

async function medianMs(read) {
  const times = [];
  for (let i = 0; i < 9; i++) {
    const began = performance.now();
    const session = await read();
    times.push(performance.now() - began);
    if (session.events.length !== READ_EVENTS) throw new Error("short read");
  }
  return times.sort((a, b) => a - b)[4];
}

const clientAppend = (app, user, session, body) => client.appendEvent(app, user, session, body);
await appends(clientAppend); // warm-up: connections, JIT
const rows = {
  client: await appends(clientAppend),
  fetch: await appends(rawAppend),
};
const app = `s17-node-read-${randomUUID().slice(0, 6)}`;
await client.createSession(app, "u", { sessionId: "long" });
for (let i = 0; i < READ_EVENTS; i += 100) {
  const batch = Array.from({ length: Math.min(100, READ_EVENTS - i) }, (_, n) => event(i + n));
  await client.appendEvents(app, "u", "long", batch);
}
rows.clientReadMs = await medianMs(() => client.getSession(app, "u", "long"));
rows.fetchReadMs = await medianMs(async () => (await fetch(path(app, "u", "long"))).json());
console.log(JSON.stringify(rows));
