// Where a session comes from and what came of it: its parent (what a fork inherited, the
// answer a child posted), its ancestors, its forks and children.

import { api, findResponse, responsesOf, sessionPath } from "/ui/api.js";
import { h, json, link, sessionHash } from "/ui/dom.js";

export function lineagePanel(page, ancestors, children) {
  const { app, user, session } = page;
  const items = [];
  const parent = session.parent;
  if (parent && session.kind === "fork") {
    items.push(h("p", { class: "parent" }, "forked from ", link(sessionHash(app, user, parent.sessionId), parent.sessionId),
      ` at version ${parent.seq}`),
    h("p", { class: "muted inherited-note" }, parent.seq
      ? `Its events up to #${parent.seq} are ${parent.sessionId}'s, copied when it was forked (marked “inherited”).`
      : "It inherited no events."));
  } else if (parent) {
    items.push(h("p", { class: "parent" }, "child of ", link(sessionHash(app, user, parent.sessionId), parent.sessionId),
      ` at version ${parent.seq}`, parent.functionCallId ? [", for call ", h("code", {}, parent.functionCallId)] : ""));
    if (parent.functionCallId) items.push(childAnswer(page, parent));
  }
  if (ancestors.length > 1) {
    items.push(h("p", { class: "muted" }, "lineage: ",
      ancestors.map((one, index) => [index ? " → " : "", link(sessionHash(app, user, one.id), one.id)])));
  }
  if (children.length) {
    items.push(h("p", {}, "forks and children: "), h("ul", { class: "children" }, children.map((child) =>
      h("li", {}, link(sessionHash(app, user, child.id), child.id),
        h("span", { class: "muted" }, ` ${child.kind}`,
          child.parent?.functionCallId ? ` for call ${child.parent.functionCallId}` : "",
          child.status === "closed" ? `, closed (${child.outcome})` : "")))));
  }
  return items.length ? h("section", { class: "lineage panel", "aria-label": "Lineage" }, h("h2", {}, "Lineage"), items) : null;
}

/** What a child made for a call posted to its parent when it closed: the parent's response
 * to that call, found in the parent's events after the call, and linked there. */
function childAnswer(page, parent) {
  const box = h("div", { class: "answer", "aria-label": "Answer to the parent" });
  if (page.session.status !== "closed") {
    box.append(h("p", { class: "muted" }, `${parent.sessionId} waits: closing this child answers its call.`));
    return box;
  }
  box.append(h("p", { class: "muted" }, "Looking for the answer it posted…"));
  const there = sessionPath(page.app, page.user, parent.sessionId);
  (async () => {
    const calls = await api(there + "/toolCalls");
    const call = calls.toolCalls.find((one) => one.id === parent.functionCallId);
    const event = call && await findResponse(there, call.id, call.seq);
    const answer = event && responsesOf(event).find((part) => part.id === call.id);
    if (!answer) {
      box.replaceChildren(h("p", { class: "muted" }, `No answer to ${parent.functionCallId} in ${parent.sessionId}: `,
        "the call was answered or removed before this child closed."));
      return;
    }
    box.replaceChildren(h("p", {}, "posted its result to ",
      link(sessionHash(page.app, page.user, parent.sessionId, event.seq), `${parent.sessionId} #${event.seq}`),
      ` (the response to ${answer.name ?? "the call"}):`),
    h("pre", { class: "result" }, JSON.stringify(answer.response ?? null, null, 2)));
  })().catch((error) => box.replaceChildren(h("p", { class: "muted" },
    `The answer cannot be shown: ${error.problem?.detail || json(error.message)}`)));
  return box;
}
