// The session explorer: a read-only view of the API, in the browser, with no dependencies.
// Views are chosen by the URL's hash: #/ (apps), #/apps/A (users, search), #/apps/A/users/U
// (sessions), #/apps/A/users/U/sessions/S (a session). Everything is built with DOM nodes,
// never innerHTML: the events are user data.

const KEY = "sessionary.apiKey";
const PAGE = 50;
const EVENT_PAGE = 200;
const view = document.getElementById("view");
let leave = () => {}; // undoes what the current view started (a live tail)

// --- Talking to the API ---------------------------------------------------------------------

class ApiError extends Error {
  constructor(status, problem) {
    super(problem.detail || `HTTP ${status}`);
    this.status = status;
    this.problem = problem;
  }
}

function headers() {
  const key = sessionStorage.getItem(KEY);
  return key ? { Authorization: `Bearer ${key}` } : {};
}

function url(path, query = {}) {
  const address = new URL(path, location.origin);
  for (const [name, value] of Object.entries(query)) {
    for (const one of [value].flat()) {
      if (one !== undefined && one !== null && one !== "") address.searchParams.append(name, one);
    }
  }
  return address;
}

async function api(path, query) {
  const response = await fetch(url(path, query), { headers: headers() });
  if (response.status === 401) askForKey();
  if (!response.ok) {
    const problem = await response.json().catch(() => ({}));
    throw new ApiError(response.status, problem);
  }
  return response.json();
}

/** `/apps/a/users/u/…`, each segment percent-encoded. */
function path(...segments) {
  return "/" + segments.map(encodeURIComponent).join("/");
}

function sessionPath(app, user, id, ...rest) {
  return path("apps", app, "users", user, "sessions", id) + rest.join("");
}

// --- Building the page ----------------------------------------------------------------------

/** An element: `h("a", {href: "#/"}, "text", child, …)`. */
function h(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (name === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(name, value === true ? "" : value);
  }
  node.append(...children.flat(Infinity).filter((child) => child !== null && child !== undefined));
  return node;
}

function link(href, ...children) {
  return h("a", { href, dataset: { nav: "" } }, ...children);
}

function hashOf(...segments) {
  return "#" + path(...segments);
}

function time(seconds) {
  if (typeof seconds !== "number") return "";
  const moment = new Date(seconds * 1000);
  return h("time", { datetime: moment.toISOString(), title: moment.toISOString() },
    moment.toLocaleString());
}

function json(value) {
  const text = JSON.stringify(value);
  return text.length > 300 ? text.slice(0, 300) + "…" : text;
}

function failure(error) {
  const problem = error instanceof ApiError ? error.problem : {};
  return h("div", { role: "alert", class: "error" },
    h("strong", {}, problem.title || "Could not load this"), " ",
    problem.detail || String(error.message || error));
}

function show(title, ...content) {
  document.title = `${title} · Sessionary`;
  view.replaceChildren(...content);
  view.focus({ preventScroll: true });
}

function crumbs(app, user, session) {
  const trail = [link("#/", "apps")];
  if (app) trail.push(" / ", link(hashOf("apps", app), app));
  if (user) trail.push(" / ", link(hashOf("apps", app, "users", user), user));
  if (session) trail.push(" / ", h("span", {}, session));
  document.getElementById("crumbs").replaceChildren(...trail);
}

/** A list whose pages load as "More" is pressed: `fetchPage(token)` → {items, next}. */
function pagedList(fetchPage, render, empty) {
  const list = h("ul", { class: "items" });
  const more = h("button", { type: "button", class: "more", hidden: true }, "More");
  const status = h("div");
  let token;
  async function load() {
    more.disabled = true;
    try {
      const page = await fetchPage(token);
      list.append(...page.items.map((item) => h("li", {}, render(item))));
      token = page.next;
      more.hidden = !token;
      if (!list.children.length) status.replaceChildren(h("p", { class: "muted" }, empty));
    } catch (error) {
      status.replaceChildren(failure(error));
    } finally {
      more.disabled = false;
    }
  }
  more.addEventListener("click", load);
  load();
  return h("div", {}, list, more, status);
}

// --- Views ----------------------------------------------------------------------------------

function appsView() {
  crumbs();
  show("Apps", h("h1", {}, "Apps"), pagedList(
    async (pageToken) => {
      const page = await api("/apps", { pageSize: PAGE, pageToken });
      return { items: page.apps, next: page.nextPageToken };
    },
    (app) => link(hashOf("apps", app.appName), h("span", { class: "name" }, app.appName),
      h("span", { class: "muted" }, ` ${app.sessionCount} sessions · `, time(app.lastUpdateTime))),
    "No sessions yet, or none this key may see.",
  ));
}

function appView(app) {
  crumbs(app);
  const results = h("div", { class: "results" });
  const form = h("form", { class: "filters", role: "search" },
    h("input", { type: "search", name: "q", placeholder: "Search this app's events", "aria-label": "Search" }),
    h("button", { type: "submit" }, "Search"));
  form.addEventListener("submit", (submitted) => {
    submitted.preventDefault();
    const q = form.elements.q.value.trim();
    if (!q) return results.replaceChildren();
    results.replaceChildren(h("h2", {}, `Events matching “${q}”`), pagedList(
      async (pageToken) => {
        const page = await api(path("apps", app, "search"), { q, pageSize: PAGE, pageToken });
        return { items: page.hits, next: page.nextPageToken };
      },
      (hit) => link(`${hashOf("apps", app, "users", hit.userId, "sessions", hit.sessionId)}?seq=${hit.seq}`,
        h("span", { class: "name" }, `${hit.userId} / ${hit.sessionId} #${hit.seq}`), " ",
        h("span", { class: "muted" }, hit.author, " · "), snippet(hit.snippet)),
      "Nothing matches.",
    ));
  });
  show(app, h("h1", {}, app), form, results, h("h2", {}, "Users"), pagedList(
    async (pageToken) => {
      const page = await api(path("apps", app, "users"), { pageSize: PAGE, pageToken });
      return { items: page.users, next: page.nextPageToken };
    },
    (user) => link(hashOf("apps", app, "users", user.userId), h("span", { class: "name" }, user.userId),
      h("span", { class: "muted" }, ` ${user.sessionCount} sessions · `, time(user.lastUpdateTime))),
    "No users with sessions.",
  ));
}

/** A search snippet: text with <mark>s, kept as text and marks only. */
function snippet(html) {
  const parsed = new DOMParser().parseFromString(`<p>${html}</p>`, "text/html").body.firstChild;
  return h("span", { class: "snippet" }, [...parsed.childNodes].map((node) =>
    node.nodeName === "MARK" ? h("mark", {}, node.textContent) : node.textContent));
}

function userView(app, user, query) {
  crumbs(app, user);
  const form = h("form", { class: "filters" },
    h("input", { name: "label", placeholder: "label key:value", value: query.get("label") || "", "aria-label": "Label" }),
    h("input", { name: "displayName", placeholder: "display name", value: query.get("displayName") || "", "aria-label": "Display name" }),
    h("select", { name: "order", "aria-label": "Order" },
      h("option", { value: "desc", selected: query.get("order") !== "asc" }, "newest first"),
      h("option", { value: "asc", selected: query.get("order") === "asc" }, "oldest first")),
    h("button", { type: "submit" }, "Filter"));
  form.addEventListener("submit", (submitted) => {
    submitted.preventDefault();
    const chosen = new URLSearchParams();
    for (const name of ["label", "displayName", "order"]) {
      if (form.elements[name].value) chosen.set(name, form.elements[name].value.trim());
    }
    location.hash = `${hashOf("apps", app, "users", user)}?${chosen}`;
  });
  const filters = {
    label: query.get("label") || undefined,
    displayName: query.get("displayName") || undefined,
    order: query.get("order") || "desc",
  };
  show(user, h("h1", {}, `Sessions of ${user}`), form, pagedList(
    async (pageToken) => {
      const page = await api(path("apps", app, "users", user, "sessions"), { ...filters, pageSize: PAGE, pageToken });
      return { items: page.sessions, next: page.nextPageToken };
    },
    (session) => link(hashOf("apps", app, "users", user, "sessions", session.id),
      h("span", { class: "name" }, session.displayName || session.id),
      session.displayName ? h("span", { class: "muted" }, `${session.id} · `) : null,
      h("span", { class: "muted" }, " ", session.kind !== "root" ? `${session.kind} · ` : "",
        session.status === "closed" ? "closed · " : "", `v${session.version} · `, time(session.lastUpdateTime)),
      Object.entries(session.labels || {}).map(([key, value]) => h("span", { class: "label" }, `${key}:${value}`))),
    "No sessions match.",
  ));
}

// --- A session ------------------------------------------------------------------------------

/** Which scope a state key is in: `app:` and `user:` keys are shared, the rest the session's. */
function scopeOf(key) {
  if (key.startsWith("app:")) return "app";
  if (key.startsWith("user:")) return "user";
  if (key.startsWith("temp:")) return "temp";
  return "session";
}

function statePanel(state) {
  const scopes = { session: [], user: [], app: [] };
  for (const [key, value] of Object.entries(state)) scopes[scopeOf(key)]?.push([key, value]);
  return h("section", { class: "state", "aria-label": "State" }, h("h2", {}, "State"),
    Object.entries(scopes).map(([scope, entries]) => h("div", { class: `scope scope-${scope}`, dataset: { scope } },
      h("h3", {}, scope === "session" ? "session" : `${scope}:`),
      entries.length ? h("dl", {}, entries.map(([key, value]) => [h("dt", {}, key), h("dd", {}, json(value))]))
        : h("p", { class: "muted" }, "empty"))));
}

function lineagePanel(app, user, session, ancestors, children) {
  const items = [];
  const parent = session.parent;
  if (parent) {
    const how = session.kind === "fork" ? `forked from` : "child of";
    items.push(h("p", { class: "parent" }, `${how} `,
      link(hashOf("apps", app, "users", user, "sessions", parent.sessionId), parent.sessionId),
      ` at version ${parent.seq}`, parent.functionCallId ? ` for call ${parent.functionCallId}` : ""));
  }
  if (ancestors.length > 1) {
    items.push(h("p", { class: "muted" }, "lineage: ",
      ancestors.map((one, index) => [index ? " → " : "", link(hashOf("apps", app, "users", user, "sessions", one.id), one.id)])));
  }
  if (children.length) {
    items.push(h("p", {}, "forks and children: "), h("ul", { class: "children" }, children.map((child) =>
      h("li", {}, link(hashOf("apps", app, "users", user, "sessions", child.id), child.id),
        h("span", { class: "muted" }, ` ${child.kind}${child.status === "closed" ? `, closed (${child.outcome})` : ""}`)))));
  }
  return items.length ? h("section", { class: "lineage", "aria-label": "Lineage" }, h("h2", {}, "Lineage"), items) : null;
}

/** One event of the timeline, its function calls and responses linked to each other. */
function eventRow(event, calls) {
  // `content` is stored as sent: only what has the shape ADK gives it is shown as such.
  const parts = Array.isArray(event.content?.parts) ? event.content.parts : [];
  const actions = event.actions || {};
  const body = [];
  for (const part of parts.filter((one) => one && typeof one === "object")) {
    if (typeof part.text === "string") body.push(h("p", { class: "text" }, part.text));
    if (typeof part.functionCall === "object" && part.functionCall) {
      const call = part.functionCall;
      const status = calls.get(call.id)?.status;
      body.push(h("div", { class: `call ${status || ""}`, id: call.id && `call-${call.id}`, dataset: { callId: call.id || "" } },
        h("span", { class: "kind" }, "call"), ` ${call.name}(${json(call.args ?? {})})`,
        status && status !== "answered" ? h("span", { class: `badge ${status}` }, status) : null,
        status === "answered" ? h("button", { type: "button", class: "jump", onclick: () => jump(`response-${call.id}`) }, "→ response") : null));
    }
    if (typeof part.functionResponse === "object" && part.functionResponse) {
      const answer = part.functionResponse;
      body.push(h("div", { class: "response", id: answer.id && `response-${answer.id}`, dataset: { callId: answer.id || "" } },
        h("span", { class: "kind" }, "response"), ` ${answer.name}: ${json(answer.response ?? null)}`,
        answer.id ? h("button", { type: "button", class: "jump", onclick: () => jump(`call-${answer.id}`) }, "← call") : null));
    }
  }
  const delta = Object.entries(actions.stateDelta || {});
  if (delta.length) {
    body.push(h("div", { class: "delta" }, delta.map(([key, value]) =>
      h("span", { class: `chip scope-${scopeOf(key)}`, dataset: { scope: scopeOf(key) } }, `${key} = ${json(value)}`))));
  }
  if (actions.compaction) {
    const { startTimestamp, endTimestamp, compactedContent } = actions.compaction;
    body.push(h("div", { class: "marker compaction" }, "compaction of ", time(startTimestamp), " – ", time(endTimestamp),
      compactedContent?.parts?.[0]?.text ? h("p", { class: "text" }, compactedContent.parts[0].text) : null));
  }
  if (actions.rewindBeforeInvocationId) {
    body.push(h("div", { class: "marker rewind" }, `rewind: back to before invocation ${actions.rewindBeforeInvocationId}`));
  }
  const marker = event.customMetadata?.sessionary;
  if (marker) body.push(h("div", { class: "marker" }, json(marker)));
  return h("li", { class: "event", id: `seq-${event.seq}`, tabindex: "-1", dataset: { nav: "", seq: event.seq, author: event.author } },
    h("div", { class: "meta" }, h("span", { class: "seq" }, `#${event.seq}`), " ",
      h("span", { class: "author" }, event.author || "?"), " ", time(event.timestamp),
      event.invocationId ? h("span", { class: "muted" }, ` ${event.invocationId}`) : null),
    body.length ? body : h("p", { class: "muted" }, "(no content)"));
}

function jump(id) {
  const target = document.getElementById(id);
  if (!target) return;
  target.scrollIntoView({ block: "center" });
  target.classList.add("flash");
  setTimeout(() => target.classList.remove("flash"), 1500);
}

async function sessionView(app, user, id, query) {
  crumbs(app, user, id);
  const here = sessionPath(app, user, id);
  let session, toolCalls, ancestors, children;
  try {
    [session, toolCalls, ancestors, children] = await Promise.all([
      api(here, { numRecentEvents: 0 }),
      api(here + "/toolCalls"),
      api(here + "/lineage"),
      api(here + "/children", { pageSize: 100 }),
    ]);
  } catch (error) {
    return show(id, h("h1", {}, id), failure(error));
  }
  const calls = new Map(toolCalls.toolCalls.map((call) => [call.id, call]));
  const timeline = h("ol", { class: "timeline", "aria-label": "Events" });
  const more = h("button", { type: "button", class: "more" }, "Load more events");
  const status = h("div");
  const liveButton = h("button", { type: "button", class: "live", "aria-pressed": "false" }, "Live tail");
  // Oldest first, or (`?order=desc`) newest first: a long session's latest turns at once.
  const newestFirst = query.get("order") === "desc";
  const orderLink = link(`${hashOf("apps", app, "users", user, "sessions", id)}?order=${newestFirst ? "asc" : "desc"}`,
    newestFirst ? "Oldest first" : "Newest first");
  let token;
  let done = false;
  let lastSeq = 0; // the newest seq shown

  function add(events, atTop = false) {
    const rows = events.map((event) => eventRow(event, calls));
    if (atTop) timeline.prepend(...rows.reverse());
    else timeline.append(...rows);
    lastSeq = Math.max(lastSeq, ...events.map((event) => event.seq));
  }

  async function loadPage() {
    more.disabled = true;
    try {
      const order = newestFirst ? "desc" : "asc";
      const page = await api(here + "/events", { pageSize: EVENT_PAGE, pageToken: token, order });
      add(page.events);
      token = page.nextPageToken;
      done = !token;
      more.hidden = done;
    } catch (error) {
      status.replaceChildren(failure(error));
      throw error;
    } finally {
      more.disabled = false;
    }
  }
  more.addEventListener("click", () => loadPage().catch(() => {})); // shown in `status`

  // The live tail: the session's stream, after the last event shown.
  let stop = null;
  async function live(on) {
    stop?.();
    stop = null;
    liveButton.setAttribute("aria-pressed", String(on));
    if (!on) return;
    while (!done && !newestFirst) await loadPage(); // the newest must be on the page already
    const aborter = new AbortController();
    stop = () => aborter.abort();
    tail(here + "/events:stream", lastSeq, aborter.signal, (kind, data) => {
      if (kind === "appended" && data.seq > lastSeq) add([data], newestFirst);
      if (kind === "closed" || kind === "deleted") status.replaceChildren(h("p", { class: "muted" }, `The session was ${kind}.`));
    }).catch((error) => aborter.signal.aborted || status.replaceChildren(failure(error)));
  }
  liveButton.addEventListener("click", () => live(liveButton.getAttribute("aria-pressed") !== "true"));
  leave = () => stop?.();

  const info = [session.kind, session.status, `version ${session.version}`,
    session.status === "closed" && session.outcome ? `outcome ${session.outcome}` : null].filter(Boolean).join(" · ");
  show(session.displayName || id,
    h("h1", {}, session.displayName || id),
    h("p", { class: "muted" }, info, " · created ", time(session.createTime), " · updated ", time(session.lastUpdateTime),
      Object.entries(session.labels || {}).map(([key, value]) => h("span", { class: "label" }, `${key}:${value}`))),
    h("div", { class: "columns" },
      h("div", { class: "main" },
        h("div", { class: "toolbar" }, h("h2", {}, "Timeline"), h("span", {}, orderLink, " ", liveButton)),
        timeline, more, status),
      h("aside", {}, statePanel(session.state), lineagePanel(app, user, session, ancestors.sessions, children.sessions))));
  try {
    await loadPage();
    const seq = Number(query.get("seq"));
    if (seq && !newestFirst) {
      while (!done && lastSeq < seq) await loadPage();
      jump(`seq-${seq}`);
    }
  } catch {
    // shown in `status`
  }
}

/** Reads a server-sent-event stream with fetch (EventSource cannot send the API key). */
async function tail(address, after, signal, onEvent) {
  const response = await fetch(url(address, { afterSeq: after }), { headers: headers(), signal });
  if (!response.ok) throw new ApiError(response.status, await response.json().catch(() => ({})));
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const fields = Object.fromEntries(buffer.slice(0, end).split("\n")
        .filter((line) => line && !line.startsWith(":")).map((line) => [line.slice(0, line.indexOf(":")), line.slice(line.indexOf(":") + 2)]));
      buffer = buffer.slice(end + 2);
      if (fields.event) onEvent(fields.event, JSON.parse(fields.data || "null"));
    }
  }
}

// --- The key, the router, the keyboard -------------------------------------------------------

const keyDialog = document.getElementById("key-dialog");
const keyButton = document.getElementById("key-button");

function askForKey() {
  keyButton.hidden = false;
  if (!keyDialog.open) keyDialog.showModal();
}

document.getElementById("key-form").addEventListener("submit", () => {
  sessionStorage.setItem(KEY, document.getElementById("key-input").value.trim());
  route();
});
document.getElementById("key-forget").addEventListener("click", () => {
  sessionStorage.removeItem(KEY);
  keyDialog.close();
  route();
});
keyButton.addEventListener("click", askForKey);
document.getElementById("help-button").addEventListener("click", () => document.getElementById("help-dialog").showModal());
if (sessionStorage.getItem(KEY)) keyButton.hidden = false;

function route() {
  leave();
  leave = () => {};
  const [where, search] = location.hash.slice(1).split("?");
  const query = new URLSearchParams(search || "");
  const parts = (where || "/").split("/").filter(Boolean).map(decodeURIComponent);
  if (parts[0] !== "apps" || parts.length === 1) return appsView();
  if (parts.length === 2) return appView(parts[1]);
  if (parts.length === 4 && parts[2] === "users") return userView(parts[1], parts[3], query);
  if (parts.length === 6 && parts[4] === "sessions") return sessionView(parts[1], parts[3], parts[5], query);
  return appsView();
}

function up() {
  const parts = location.hash.slice(1).split("?")[0].split("/").filter(Boolean);
  location.hash = "#/" + parts.slice(0, parts.length > 2 ? parts.length - 2 : 0).join("/");
}

function move(step) {
  const items = [...view.querySelectorAll("[data-nav]")];
  if (!items.length) return;
  const at = items.indexOf(document.activeElement);
  const next = items[Math.min(items.length - 1, Math.max(0, at < 0 ? 0 : at + step))];
  next.focus();
  next.scrollIntoView({ block: "nearest" });
}

document.addEventListener("keydown", (pressed) => {
  const typing = pressed.target.closest?.("input, select, textarea, dialog");
  if (typing || pressed.ctrlKey || pressed.metaKey || pressed.altKey) return;
  const actions = {
    j: () => move(1),
    k: () => move(-1),
    u: up,
    "/": () => view.querySelector("input")?.focus(),
    l: () => view.querySelector("button.live")?.click(),
    "?": () => document.getElementById("help-dialog").showModal(),
  };
  const action = actions[pressed.key];
  if (action) {
    pressed.preventDefault();
    action();
  }
});

window.addEventListener("hashchange", route);
route();
