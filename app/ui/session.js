// A session: its facts (times that say which is which, events, usage), its timeline (a
// window of events by invocation, newest first, with a jump to any seq or time and the live
// tail on top), its context view, its artifacts, its state by scope, its lineage, the detail
// of one event, and, for a key that may write it, the operator's actions.

import { actionsMenu, forkDialog } from "/ui/actions.js";
import { artifactsPanel } from "/ui/artifacts.js";
import { api, callsOf, findResponse, mayWrite, responsesOf, sessionPath, tail } from "/ui/api.js";
import { contextPanel, usageLine } from "/ui/context.js";
import { crumbs, failure, h, hashOf, link, plural, scopes, show, stamp } from "/ui/dom.js";
import { detailPanel } from "/ui/events.js";
import { lineagePanel } from "/ui/lineage.js";
import { timeline } from "/ui/timeline.js";

/** Opens a session; returns what undoes what it started (the live tail). */
export async function sessionView(app, user, id, query, route) {
  crumbs(app, user, id);
  const here = sessionPath(app, user, id);
  let session, toolCalls, ancestors, children, span, writable;
  try {
    [session, toolCalls, ancestors, children, span, writable] = await Promise.all([
      api(here, { numRecentEvents: 0 }),
      api(here + "/toolCalls"),
      api(here + "/lineage"),
      api(here + "/children", { pageSize: 100 }),
      api(here + "/events:count").catch(() => null),
      mayWrite(app, user),
    ]);
  } catch (error) {
    show(id, h("h1", {}, id), failure(error));
    return () => {};
  }
  const descending = query.get("order") !== "asc";
  const detailSlot = h("div", { class: "detail-slot" });
  const page = {
    app, user, id, here, session, span,
    version: session.version,
    calls: new Map(toolCalls.toolCalls.map((call) => [call.id, call])),
    children: new Map(children.sessions.filter((child) => child.parent?.functionCallId)
      .map((child) => [child.parent.functionCallId, child])),
    inherited: session.kind === "fork" && session.parent ? { id: session.parent.sessionId, seq: session.parent.seq } : null,
    mayWrite: writable,
    selected: null,
    responses: new Map(), // call id → the seq of its response, once looked for
    details(event) {
      page.selected = event.seq;
      detailSlot.replaceChildren(detailPanel(event, page, page.closeDetails));
      document.querySelectorAll(".event.selected").forEach((row) => row.classList.remove("selected"));
      document.getElementById(`seq-${event.seq}`)?.classList.add("selected");
      detailSlot.querySelector("h2")?.scrollIntoView({ block: "nearest" });
    },
    closeDetails() {
      detailSlot.replaceChildren();
      document.querySelectorAll(".event.selected").forEach((row) => row.classList.remove("selected"));
      if (page.selected) document.getElementById(`seq-${page.selected}`)?.focus({ preventScroll: true });
      page.selected = null;
    },
    selectedSeq() {
      return page.selected ?? span?.lastSeq ?? session.version;
    },
    jumpTo(seq) {
      showTab("timeline");
      return events.jumpTo(seq);
    },
    toCall(callId) {
      const call = page.calls.get(callId);
      if (call) page.jumpTo(call.seq);
    },
    responseSeq(callId, fromSeq) {
      if (!page.responses.has(callId)) {
        const shown = document.getElementById(`response-${callId}`)?.closest(".event");
        const after = fromSeq ?? page.calls.get(callId)?.seq ?? 0;
        page.responses.set(callId, shown ? Promise.resolve(Number(shown.dataset.seq))
          : findResponse(here, callId, after).then((event) => event?.seq ?? null, () => null));
      }
      return page.responses.get(callId);
    },
    async toResponse(callId) {
      const seq = await page.responseSeq(callId);
      if (seq) return page.jumpTo(seq);
      events.problems.replaceChildren(h("p", { role: "alert", class: "error" },
        `The response to ${callId} could not be found in the events after its call.`));
      return null;
    },
    fork: (seq) => forkDialog(page, seq),
    reload: route,
  };

  // --- The timeline, the context view, the artifacts, and their tabs ---------------------------
  const events = timeline(page, { descending });
  const context = contextPanel(page);
  const artifacts = artifactsPanel(page, { counted: (count, more) => {
    tabs.artifacts.button.textContent = `Artifacts (${count}${more ? "+" : ""})`;
  } });
  const tabs = {
    timeline: { label: "Timeline", panel: h("div", { id: "panel-timeline", role: "tabpanel", "aria-labelledby": "tab-timeline" }) },
    context: { label: "Context", panel: h("div", { id: "panel-context", role: "tabpanel", "aria-labelledby": "tab-context", hidden: true }, context.element) },
    artifacts: { label: "Artifacts", panel: h("div", { id: "panel-artifacts", role: "tabpanel", "aria-labelledby": "tab-artifacts", hidden: true }, artifacts.element) },
  };
  for (const [name, tab] of Object.entries(tabs)) {
    tab.button = h("button", { type: "button", role: "tab", id: `tab-${name}`, "aria-controls": `panel-${name}`,
      "aria-selected": String(name === "timeline"), onclick: () => showTab(name) }, tab.label);
  }
  function showTab(name) {
    for (const [other, tab] of Object.entries(tabs)) {
      tab.button.setAttribute("aria-selected", String(other === name));
      tab.panel.hidden = other !== name;
    }
    if (name === "context") context.shown();
  }
  page.showTab = showTab;

  // --- Jumping to a seq or a time -------------------------------------------------------------
  const seqInput = h("input", { type: "number", name: "seq", min: "0", placeholder: "seq", "aria-label": "Jump to seq" });
  const timeInput = h("input", { type: "datetime-local", name: "time", step: "1", "aria-label": "Jump to time" });
  const jump = h("form", { class: "jump-to", role: "search", "aria-label": "Jump", onsubmit: async (submitted) => {
    submitted.preventDefault();
    if (seqInput.value) return events.jumpTo(Number(seqInput.value));
    if (!timeInput.value) return;
    const at = new Date(timeInput.value).getTime() / 1000;
    const first = await api(here + "/events", { afterTimestamp: at, pageSize: 1 }).catch((error) => {
      events.problems.replaceChildren(failure(error));
      return null;
    });
    if (!first) return;
    if (!first.events.length) {
      events.problems.replaceChildren(h("p", { role: "alert", class: "error" }, "No event at or after that time."));
      return;
    }
    events.jumpTo(first.events[0].seq);
  } }, "Jump to ", seqInput, " or the first event at or after ", timeInput, h("button", { type: "submit" }, "Go"));

  // --- The live tail: the session's stream, after the newest event shown ------------------------
  const liveButton = h("button", { type: "button", class: "live", "aria-pressed": "false", title: "Live tail (l)" }, "Live tail");
  const liveStatus = h("div", { "aria-live": "polite" });
  let stop = null;
  async function live(on) {
    stop?.();
    stop = null;
    liveButton.setAttribute("aria-pressed", String(on));
    if (!on) return;
    if (!events.atNewest) await events.openNewest(); // the newest must be shown first
    if (liveButton.getAttribute("aria-pressed") !== "true" || stop) return; // switched meanwhile
    const aborter = new AbortController();
    stop = () => aborter.abort();
    tail(here + "/events:stream", events.high, aborter.signal, (kind, data) => {
      if (kind === "appended" && data.seq > events.high) appended(data);
      else if (["updated", "removed", "trimmed", "reset", "resync"].includes(kind)) {
        page.version = Math.max(page.version, data?.version ?? 0);
        liveStatus.replaceChildren(h("p", { class: "notice" }, "Events were removed or rewritten meanwhile. ",
          h("button", { type: "button", onclick: route }, "Reload")));
      } else if (kind === "artifact") {
        artifacts.reload(); // saved or deleted: a save takes no version, so no event says so
      } else if (kind === "closed" || kind === "deleted") {
        liveStatus.replaceChildren(h("p", { class: "notice" }, `The session was ${kind}.`));
      }
    }).catch((error) => aborter.signal.aborted || liveStatus.replaceChildren(failure(error)));
  }
  function appended(event) {
    page.version = Math.max(page.version, event.seq);
    if (span) {
      span.count += 1;
      span.lastSeq = event.seq;
      span.firstSeq ??= event.seq;
    }
    for (const call of callsOf(event)) {
      if (call.id) page.calls.set(call.id, { id: call.id, name: call.name, seq: event.seq, status: "pending" });
    }
    for (const answer of responsesOf(event)) {
      const call = page.calls.get(answer.id);
      if (call) call.status = "answered";
    }
    if (events.atNewest) events.add([event]); // not after a window jumped to since
    else events.refresh();
    counts.replaceChildren(...countLine());
  }
  liveButton.addEventListener("click", () => live(liveButton.getAttribute("aria-pressed") !== "true"));

  // --- The head: what it is, and times that say which is which ---------------------------------
  const counts = h("dd", { class: "counts" });
  function countLine() {
    if (!span) return [`version ${page.version}`];
    return [plural(span.count, "event"), span.count ? ` (#${span.firstSeq} to #${span.lastSeq})` : "",
      ` · version ${page.version}`];
  }
  counts.append(...countLine());
  const noEvents = span ? span.count === 0 : session.version === 0;
  const facts = h("dl", { class: "facts head" },
    h("dt", {}, "Status"), h("dd", {}, `${session.kind} · ${session.status}`,
      session.status === "closed" && session.outcome ? ` (${session.outcome})` : ""),
    h("dt", {}, "Events"), counts,
    h("dt", {}, "Created"), h("dd", { class: "created" }, stamp(session.createTime)),
    h("dt", { title: "lastUpdateTime: the timestamp the last appended event carries, from its writer's clock" }, "Last event"),
    h("dd", { class: "last-event" }, noEvents ? h("span", { class: "muted" }, "none yet")
      : [stamp(session.lastUpdateTime), h("span", { class: "muted" }, " by its writer's clock")]),
    h("dt", {}, "Tokens"), h("dd", { class: "tokens" }, usageLine(session.usage)),
    session.expireTime ? [h("dt", {}, "Expires"), h("dd", {}, stamp(session.expireTime))] : null,
    Object.keys(session.labels || {}).length ? [h("dt", {}, "Labels"), h("dd", {},
      Object.entries(session.labels).map(([key, value]) => h("span", { class: "label" }, `${key}:${value}`)))] : null);

  const orderLink = link(`${hashOf("apps", app, "users", user, "sessions", id)}?order=${descending ? "asc" : "desc"}`,
    descending ? "Oldest first" : "Newest first");
  tabs.timeline.panel.append(
    h("div", { class: "toolbar" }, jump, h("span", { class: "tools" }, orderLink, " ", liveButton)),
    liveStatus, events.element);

  show(session.displayName || id,
    h("div", { class: "headline" },
      h("div", {}, h("h1", {}, session.displayName || id),
        session.displayName ? h("p", { class: "muted id" }, id) : null),
      page.mayWrite ? actionsMenu(page) : null),
    facts,
    h("div", { class: "columns" },
      h("div", { class: "main" },
        h("div", { class: "tabs", role: "tablist", "aria-label": "Views" }, Object.values(tabs).map((tab) => tab.button)),
        Object.values(tabs).map((tab) => tab.panel)),
      h("aside", {}, detailSlot,
        h("section", { class: "state panel", "aria-label": "State" }, h("h2", {}, "State"), scopes(session.state)),
        lineagePanel(page, ancestors.sessions, children.sessions))));

  artifacts.load(); // beside the events: its count goes on its tab
  const seq = Number(query.get("seq"));
  await events.open(seq || null);
  if (seq) await events.jumpTo(seq);
  return () => stop?.();
}
