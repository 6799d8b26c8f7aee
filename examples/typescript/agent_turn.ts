/**
 * A TypeScript agent worker's turn with a tool call, while a watcher follows the session live.
 * With the client installed in your app as its README says (clients/typescript, Install), copy
 * this file there and run it, on Node 20.3+:
 *
 *   npx tsx agent_turn.ts   # against SESSIONARY_URL, else http://127.0.0.1:8000
 *
 * (From Node 22.18, `node agent_turn.ts` runs it too.) It prints:
 *
 *   pending calls: call-1
 *   context: 4 events in 22 tokens
 *   watched: 1 appended, 2 appended, 3 appended, 4 appended, 5 closed
 */
import { Sessionary } from "sessionary-client";

const sessionary = new Sessionary(); // SESSIONARY_URL and SESSIONARY_API_KEY
const created = await sessionary.createSession("examples", "ada", { sessionId: `turn-${crypto.randomUUID()}` });
const chat = sessionary.session("examples", "ada", created.id);

// The watcher reads the whole session, then what is committed from now, until it is closed.
const watching = (async () => {
  const seen: string[] = [];
  for await (const change of chat.streamEvents({ afterSeq: 0 })) {
    seen.push(`${change.id} ${change.event}`);
  }
  return seen;
})();

await chat.appendEvent({ author: "user", content: { role: "user", parts: [{ text: "Weather in Oslo?" }] } });
const call = { id: "call-1", name: "get_weather", args: { city: "Oslo" } };
await chat.appendEvent({ author: "forecaster", content: { role: "model", parts: [{ functionCall: call }] } });
const pending = await chat.toolCalls({ status: "pending" });
console.log("pending calls:", pending.map((c) => c.id).join(", "));

const answer = { id: "call-1", name: "get_weather", response: { celsius: 21 } };
await chat.appendEvent({ author: "forecaster", content: { role: "user", parts: [{ functionResponse: answer }] } });
await chat.appendEvent({ author: "forecaster", content: { role: "model", parts: [{ text: "Sunny, 21 °C." }] } });

const context = await chat.context({ tokenBudget: 1000 });
console.log(`context: ${context.events.length} events in ${context.estimatedTokens} tokens`);

await chat.close("completed");
console.log("watched:", (await watching).join(", "));
