// One event: its row in a timeline, and its detail panel (the event whole).
//
// `page` is the session being shown: its calls (`toolCalls`, by id), its children by the call
// each works on, what a fork inherited, and how to move about it (`jumpTo`, `toCall`,
// `toResponse`, `details`, `fork`).

import { callsOf, partsOf, responsesOf } from "/ui/api.js";
import { formatNumber, h, json, link, moment, scopeOf, scopes, sessionHash, stamp } from "/ui/dom.js";

/** One event of a timeline, its function calls and responses linked to each other; its ids
 * (`seq-7`, `call-w1`, `response-w1`) after `prefix`. */
export function eventRow(event, page, prefix = "") {
  const actions = event.actions && typeof event.actions === "object" ? event.actions : {};
  const body = [];
  for (const part of partsOf(event)) {
    if (typeof part.text === "string") body.push(h("p", { class: "text" }, part.text));
    if (part.functionCall && typeof part.functionCall === "object") body.push(callBox(part.functionCall, page, prefix));
    if (part.functionResponse && typeof part.functionResponse === "object") body.push(responseBox(part.functionResponse, page, prefix));
  }
  const delta = Object.entries(actions.stateDelta || {});
  if (delta.length) {
    body.push(h("div", { class: "delta" }, delta.map(([key, value]) =>
      h("span", { class: `chip scope-${scopeOf(key)}`, dataset: { scope: scopeOf(key) } }, `${key} = ${json(value)}`))));
  }
  if (actions.compaction && typeof actions.compaction === "object") {
    const { startTimestamp, endTimestamp, compactedContent } = actions.compaction;
    const summary = compactedContent?.parts?.[0]?.text;
    body.push(h("div", { class: "marker compaction" }, "compaction of ", moment(startTimestamp), " – ", moment(endTimestamp),
      typeof summary === "string" ? h("p", { class: "text" }, summary) : null));
  }
  if (actions.rewindBeforeInvocationId) {
    body.push(h("div", { class: "marker rewind" }, `rewind: back to before invocation ${actions.rewindBeforeInvocationId}`));
  }
  const marker = event.customMetadata?.sessionary;
  if (marker) body.push(h("div", { class: "marker" }, json(marker)));
  const inherited = page.inherited && event.seq <= page.inherited.seq;
  const row = h("li", {
    class: `event${inherited ? " inherited" : ""}`, id: `${prefix}seq-${event.seq}`, tabindex: "-1",
    dataset: { nav: "", seq: event.seq, author: event.author },
    onclick: (clicked) => clicked.target.closest("a, button, summary") || page.details(event),
  },
  h("div", { class: "meta" }, h("span", { class: "seq" }, `#${event.seq}`), " ",
    h("span", { class: "author" }, event.author || "?"), " ", moment(event.timestamp),
    event.invocationId ? h("span", { class: "muted invocation-id" }, ` ${event.invocationId}`) : null,
    inherited ? h("span", { class: "tag inherited" }, "inherited from ",
      link(sessionHash(page.app, page.user, page.inherited.id, event.seq), page.inherited.id)) : null,
    h("button", { type: "button", class: "jump details", "aria-label": `Details of event #${event.seq}`,
      onclick: () => page.details(event) }, "details")),
  body.length ? body : h("p", { class: "muted" }, "(no content)"));
  return row;
}

function callBox(call, page, prefix) {
  const known = page.calls.get(call.id);
  const status = known?.status;
  const child = page.children.get(call.id);
  return h("div", { class: `call ${status || ""}`, id: call.id && `${prefix}call-${call.id}`, dataset: { callId: call.id || "" } },
    h("span", { class: "kind" }, "call"), ` ${call.name}(${json(call.args ?? {})})`,
    status && status !== "answered" ? h("span", { class: `badge ${status}` }, status) : null,
    status === "answered" ? h("button", { type: "button", class: "jump", onclick: () => page.toResponse(call.id) }, "→ response") : null,
    child ? h("span", { class: "child-link" }, " worked on by child ",
      link(sessionHash(page.app, page.user, child.id), child.id)) : null);
}

function responseBox(answer, page, prefix) {
  const child = page.children.get(answer.id);
  return h("div", { class: "response", id: answer.id && `${prefix}response-${answer.id}`, dataset: { callId: answer.id || "" } },
    h("span", { class: "kind" }, "response"), ` ${answer.name}: ${json(answer.response ?? null)}`,
    answer.id && page.calls.has(answer.id) ? h("button", { type: "button", class: "jump", onclick: () => page.toCall(answer.id) }, "← call") : null,
    child ? h("span", { class: "child-link" }, " posted by child ",
      link(sessionHash(page.app, page.user, child.id), child.id)) : null);
}

// --- The detail panel -----------------------------------------------------------------------

/** The event whole: its fields, calls and responses with where their pairs are, its state
 * delta by scope, its usage, and its raw JSON (copyable). */
export function detailPanel(event, page, close) {
  const raw = JSON.stringify(event, null, 2);
  const copied = h("span", { class: "muted", role: "status" });
  const copy = h("button", { type: "button", onclick: async () => {
    try {
      await navigator.clipboard.writeText(raw);
      copied.textContent = " Copied.";
    } catch {
      copied.textContent = " The browser refused the clipboard: select the text instead.";
    }
  } }, "Copy JSON");
  const delta = event.actions?.stateDelta;
  const usage = event.usageMetadata && typeof event.usageMetadata === "object" ? event.usageMetadata : null;
  const pairs = [...callsOf(event).map((call) => callPair(call, event, page)),
    ...responsesOf(event).map((answer) => responsePair(answer, page))];
  return h("section", { class: "detail panel", "aria-label": "Event details" },
    h("div", { class: "toolbar" }, h("h2", {}, `Event #${event.seq}`),
      h("button", { type: "button", class: "close", "aria-label": "Close details", title: "Close (Esc)", onclick: close }, "×")),
    h("dl", { class: "facts" },
      h("dt", {}, "id"), h("dd", {}, h("code", {}, event.id ?? "")),
      h("dt", {}, "author"), h("dd", {}, event.author ?? ""),
      event.invocationId ? [h("dt", {}, "invocation"), h("dd", {}, h("code", {}, event.invocationId))] : null,
      event.branch ? [h("dt", {}, "branch"), h("dd", {}, h("code", {}, String(event.branch)))] : null,
      h("dt", {}, "timestamp"), h("dd", {}, stamp(event.timestamp), h("br"), h("span", { class: "muted" }, "as its writer sent it"))),
    pairs.length ? [h("h3", {}, "Calls and responses"), h("ul", { class: "pairs" }, pairs)] : null,
    h("h3", {}, "State delta"),
    delta && typeof delta === "object" && Object.keys(delta).length
      ? h("div", { class: "delta-scopes" }, scopes(delta, { label: "Delta", empty: "no change" }))
      : h("p", { class: "muted" }, "No state change."),
    h("h3", {}, "Usage"),
    usage ? h("dl", { class: "facts usage" }, Object.entries(usage).map(([name, value]) =>
      [h("dt", {}, name), h("dd", {}, typeof value === "number" ? formatNumber(value) : json(value))]))
      : h("p", { class: "muted" }, "No usageMetadata."),
    page.mayWrite
      ? h("p", {}, h("button", { type: "button", onclick: () => page.fork(event.seq) }, `Fork here (at #${event.seq})…`))
      : null,
    h("div", { class: "toolbar" }, h("h3", {}, "Raw JSON"), h("span", {}, copy, copied)),
    h("pre", { class: "raw", tabindex: "0", "aria-label": "Raw JSON" }, raw));
}

function callPair(call, event, page) {
  const known = page.calls.get(call.id);
  const status = known?.status || "untracked"; // no id, or rewound: not among the live calls
  const where = h("span", {});
  if (status === "answered") {
    const button = h("button", { type: "button", class: "jump", onclick: () => page.toResponse(call.id) }, "→ response");
    where.append(button);
    page.responseSeq(call.id, event.seq).then((seq) => {
      if (seq) button.textContent = `→ response in #${seq}`;
    }).catch(() => {});
  }
  const child = page.children.get(call.id);
  return h("li", {}, h("span", { class: "kind" }, "call"), " ", h("code", {}, call.name ?? "?"),
    call.id ? h("span", { class: "muted" }, ` (${call.id})`) : null, " ",
    status !== "answered" ? h("span", { class: `badge ${status}` }, status) : null, " ", where,
    child ? [" · child ", link(sessionHash(page.app, page.user, child.id), child.id)] : null);
}

function responsePair(answer, page) {
  const known = page.calls.get(answer.id);
  const child = page.children.get(answer.id);
  return h("li", {}, h("span", { class: "kind" }, "response"), " ", h("code", {}, answer.name ?? "?"),
    answer.id ? h("span", { class: "muted" }, ` (${answer.id})`) : null, " ",
    known ? h("button", { type: "button", class: "jump", onclick: () => page.toCall(answer.id) }, `← call in #${known.seq}`)
      : h("span", { class: "muted" }, "no call in the live events"),
    child ? [" · from child ", link(sessionHash(page.app, page.user, child.id), child.id)] : null);
}
