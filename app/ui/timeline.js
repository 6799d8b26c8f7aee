// A session's timeline: a window of its events (200 at a time), newest first by default,
// grouped by invocation, that grows at either end, moves to any seq or time, and takes the
// live tail's events at its newest end.
//
// Seqs only grow and never repeat, so "the events below seq N" is a plain range: the page
// after seq N − 201 holds every one of them (at most 200 seqs fit in between).

import { api } from "/ui/api.js";
import { duration, failure, flash, h, plural } from "/ui/dom.js";
import { eventRow } from "/ui/events.js";

export const PAGE = 200;

export function timeline(page, { descending }) {
  const list = h("ol", { class: "timeline", "aria-label": "Events" });
  const newer = h("button", { type: "button", class: "more", hidden: true, onclick: () => run(loadNewer) }, "Newer events");
  const older = h("button", { type: "button", class: "more", hidden: true, onclick: () => run(loadOlder) }, "Older events");
  const status = h("p", { class: "muted window", "aria-live": "polite" });
  const problems = h("div");
  const rows = new Map(); // seq → its row
  let blocks = []; // in seq order: an invocation's group, or an event outside any
  let floor = 0; // every event with floor < seq ≤ high is shown
  let high = null;
  let atNewest = false;
  const placeNewer = (node, parent) => (descending ? parent.prepend(node) : parent.append(node));
  const placeOlder = (node, parent) => (descending ? parent.append(node) : parent.prepend(node));

  function reset() {
    list.replaceChildren();
    rows.clear();
    blocks = [];
    floor = 0;
    high = null;
    atNewest = false;
    problems.replaceChildren();
  }

  function group(invocation) {
    const summary = h("summary", { dataset: { nav: "" } });
    const events = h("ol", { class: "events" });
    const details = h("details", { open: true }, summary, events);
    const element = h("li", { class: "invocation", dataset: { invocation } }, details);
    return { invocation, element, events, summary, members: [] };
  }

  function describe(block) {
    const times = block.members.map((event) => event.timestamp).filter((time) => typeof time === "number");
    const authors = [...new Set(block.members.map((event) => event.author).filter(Boolean))];
    const took = times.length ? duration(Math.max(...times) - Math.min(...times)) : "";
    block.summary.replaceChildren(h("span", { class: "kind" }, "invocation"), " ",
      h("code", {}, block.invocation), h("span", { class: "muted" },
        ` · ${plural(block.members.length, "event")}`, took ? ` · ${took}` : "",
        authors.length ? ` · ${authors.join(", ")}` : ""));
    block.summary.dataset.duration = took;
  }

  /** Adds events (in seq order) at the newer or the older end, into their invocations. */
  function place(events, end) {
    const fresh = events.filter((event) => !rows.has(event.seq));
    const touched = new Set();
    for (const event of end === "newer" ? fresh : [...fresh].reverse()) {
      const row = eventRow(event, page);
      rows.set(event.seq, row);
      const edge = end === "newer" ? blocks.at(-1) : blocks[0];
      let block = edge?.invocation && edge.invocation === event.invocationId ? edge : null;
      if (!block) {
        block = event.invocationId ? group(event.invocationId) : { element: row, members: [] };
        if (end === "newer") blocks.push(block);
        else blocks.unshift(block);
        (end === "newer" ? placeNewer : placeOlder)(block.element, list);
      }
      if (block.events) {
        (end === "newer" ? placeNewer : placeOlder)(row, block.events);
        if (end === "newer") block.members.push(event);
        else block.members.unshift(event);
        touched.add(block);
      }
    }
    touched.forEach(describe);
    if (fresh.length) {
      const seqs = fresh.map((event) => event.seq);
      high = Math.max(high ?? 0, ...seqs);
    }
  }

  function low() {
    return blocks.length ? Math.min(...rows.keys()) : null;
  }

  function refresh() {
    const span = page.span; // null if the count could not be read
    const atOldest = span ? span.firstSeq === null || floor < span.firstSeq : floor === 0;
    older.hidden = atOldest;
    newer.hidden = atNewest;
    if (span && atOldest && atNewest && rows.size === span.count) {
      status.textContent = span.count ? `${plural(span.count, "event")}, all shown` : "No events yet.";
      return;
    }
    const shown = rows.size ? `showing ${plural(rows.size, "event")}, #${low()} to #${high}` : "none shown";
    status.textContent = span ? `${plural(span.count, "event")} · ${shown}` : shown;
  }

  async function run(load) {
    newer.disabled = older.disabled = true;
    try {
      await load();
    } catch (error) {
      problems.replaceChildren(failure(error));
    } finally {
      newer.disabled = older.disabled = false;
      refresh();
    }
  }

  async function range(afterSeq) {
    return (await api(page.here + "/events", { afterSeq, pageSize: PAGE })).events;
  }

  /** The newest events, the window's newer end the session's. */
  async function openNewest() {
    const found = await api(page.here + "/events", { order: "desc", pageSize: PAGE });
    reset();
    const events = found.events.reverse();
    place(events, "newer");
    floor = found.nextPageToken && events.length ? events[0].seq - 1 : 0;
    atNewest = true;
  }

  async function openOldest() {
    const found = await api(page.here + "/events", { pageSize: PAGE });
    reset();
    place(found.events, "newer");
    atNewest = !found.nextPageToken;
  }

  /** A window around `seq`. */
  async function openAt(seq) {
    const from = Math.max(0, seq - 1 - PAGE / 2);
    const events = await range(from);
    reset();
    floor = from;
    place(events, "newer");
    atNewest = events.length < PAGE;
  }

  async function loadOlder() {
    const oldest = page.span?.firstSeq ?? 1;
    // Skip over a gap (removed events) rather than answer an empty page.
    for (let tries = 0; tries < 20 && floor >= oldest; tries++) {
      const from = Math.max(0, floor - PAGE);
      const events = (await range(from)).filter((event) => event.seq <= floor);
      floor = from;
      place(events, "older");
      if (events.length) return;
    }
  }

  async function loadNewer() {
    const events = await range(high ?? floor);
    place(events, "newer");
    atNewest = events.length < PAGE;
  }

  /** Shows the event at `seq` (or the next one there is), loading a window around it. */
  async function jumpTo(seq, { focus = true } = {}) {
    problems.replaceChildren();
    if (!rows.has(seq)) {
      const span = page.span;
      if (span && (span.count === 0 || seq < span.firstSeq || seq > span.lastSeq)) {
        problems.replaceChildren(h("p", { role: "alert", class: "error" }, `No event #${seq}: `,
          span.count ? `this session's events run from #${span.firstSeq} to #${span.lastSeq}.` : "this session has none."));
        return null;
      }
      await run(() => openAt(seq));
    }
    const at = [...rows.keys()].filter((one) => one >= seq).sort((a, b) => a - b)[0];
    const row = rows.get(at);
    if (!row) return null;
    if (at !== seq) problems.replaceChildren(h("p", { class: "muted" }, `No event #${seq} (removed); the next is #${at}.`));
    const closed = row.closest("details:not([open])");
    if (closed) closed.open = true;
    flash(row);
    if (focus) row.focus({ preventScroll: true });
    return at;
  }

  return {
    element: h("div", { class: "timeline-window" }, descending ? [newer, status] : [older, status], list,
      descending ? older : newer, problems),
    rows,
    get atNewest() { return atNewest; },
    get high() { return high ?? floor; },
    open: (seq) => run(() => (seq ? openAt(seq) : descending ? openNewest() : openOldest())),
    openNewest: () => run(openNewest),
    jumpTo,
    /** Events the live tail brought, at the newer end. */
    add(events) {
      place(events, "newer");
      refresh();
    },
    refresh,
    problems,
  };
}
