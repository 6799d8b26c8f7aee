// The session explorer: a view of the API in the browser, with no dependencies. Read-only,
// but for the operator's actions on a session, offered only to a key that may write it.
// Views are chosen by the URL's hash: #/ (apps), #/apps/A (users, search, usage),
// #/apps/A/users/U (sessions), #/apps/A/users/U/sessions/S (a session: session.js).
//
// Modules: dom.js (elements, times, counts), api.js (the API, the key, the event stream),
// session.js with timeline.js, events.js, context.js, artifacts.js, lineage.js and actions.js.

import { KEY, api, hooks } from "/ui/api.js";
import { crumbs, failure, h, hashOf, link, path, plural, relativeTime, show, view } from "/ui/dom.js";
import { sessionView } from "/ui/session.js";

const PAGE = 50;
let leave = () => {}; // undoes what the current view started (a live tail)

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
      if (!list.children.length) status.replaceChildren(typeof empty === "function" ? empty() : h("p", { class: "muted" }, empty));
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

/** "last active 3 minutes ago", the full time in its title. */
function lastActive(seconds, label = "last active") {
  return h("span", { class: "when" }, `${label} `, relativeTime(seconds));
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
      h("span", { class: "muted" }, ` ${plural(app.sessionCount, "session")} · `, lastActive(app.lastUpdateTime))),
    "No sessions yet, or none this key may see.",
  ));
}

const SEARCH_HINT = ["Every word must match (stemmed: “refunds” finds “refund”). ",
  h("code", {}, "refund or return"), " for either, ", h("code", {}, "\"full refund\""), " for a phrase, ",
  h("code", {}, "-partial"), " to leave a word out."];

function appView(app) {
  crumbs(app);
  const results = h("div", { class: "results" });
  const form = h("form", { class: "filters", role: "search" },
    h("input", { type: "search", name: "q", placeholder: "Search this app's events", "aria-label": "Search" }),
    h("button", { type: "submit" }, "Search"),
    h("p", { class: "muted hint" }, SEARCH_HINT.map((part) => (typeof part === "string" ? part : part.cloneNode(true)))));
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
      () => noHits(q),
    ));
  });
  show(app, h("h1", {}, app), form, results, h("h2", {}, "Users"), pagedList(
    async (pageToken) => {
      const page = await api(path("apps", app, "users"), { pageSize: PAGE, pageToken });
      return { items: page.users, next: page.nextPageToken };
    },
    (user) => link(hashOf("apps", app, "users", user.userId), h("span", { class: "name" }, user.userId),
      h("span", { class: "muted" }, ` ${plural(user.sessionCount, "session")} · `, lastActive(user.lastUpdateTime))),
    "No users with sessions.",
  ), usagePanel(app));
}

/** What a search that found nothing says: how words combine, and how to combine them else. */
function noHits(q) {
  const words = q.split(/\s+/).filter((word) => word && !/^(or|-.*)$/i.test(word));
  const either = words.length > 1 ? words.join(" or ") : "refund or return";
  return h("div", { class: "no-hits", role: "status" },
    h("p", {}, `No event matches “${q}”.`, words.length > 1 ? ` Every word must match: no event holds all of ${words.map((word) => `“${word}”`).join(", ")}.` : ""),
    h("p", { class: "muted" }, "Try ", h("code", {}, either), " for any of them, ",
      h("code", {}, `"${words.join(" ") || "full refund"}"`), " for a phrase, or fewer words. Words are stemmed; ",
      h("code", {}, "-word"), " leaves one out."));
}

/** The app's token usage by user (an app-wide key's to read). */
function usagePanel(app) {
  const panel = h("section", { class: "app-usage", "aria-label": "Token usage" }, h("h2", {}, "Token usage"),
    h("p", { class: "muted" }, "Loading…"));
  api(path("apps", app, "usage")).then((usage) => {
    const rows = usage.users.map((one) => h("tr", {}, h("th", { scope: "row" }, one.userId),
      [one.events, one.promptTokenCount, one.candidatesTokenCount, one.totalTokenCount].map((value) => h("td", {}, value.toLocaleString()))));
    const total = usage.total;
    panel.replaceChildren(h("h2", {}, "Token usage"), usage.users.length
      ? h("table", { class: "usage-table" },
        h("thead", {}, h("tr", {}, ["user", "events", "prompt", "candidates", "total"].map((name) => h("th", { scope: "col" }, name)))),
        h("tbody", {}, rows),
        h("tfoot", {}, h("tr", {}, h("th", { scope: "row" }, "all users"),
          [total.events, total.promptTokenCount, total.candidatesTokenCount, total.totalTokenCount].map((value) => h("td", {}, value.toLocaleString())))))
      : h("p", { class: "muted" }, "No event of this app reports usageMetadata."));
  }).catch((error) => panel.replaceChildren(h("h2", {}, "Token usage"), h("p", { class: "muted" },
    error.status === 403 ? "Usage by user needs an app-wide key." : failure(error))));
  return panel;
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
        session.status === "closed" ? "closed · " : "", `version ${session.version} · `,
        // lastUpdateTime: the last event's own timestamp, or the creation time while none.
        session.version ? lastActive(session.lastUpdateTime, "last event") : lastActive(session.createTime, "created")),
      Object.entries(session.labels || {}).map(([key, value]) => h("span", { class: "label" }, `${key}:${value}`))),
    "No sessions match.",
  ));
}

// --- The key, the router, the keyboard -------------------------------------------------------

const keyDialog = document.getElementById("key-dialog");
const keyButton = document.getElementById("key-button");

function askForKey() {
  keyButton.hidden = false;
  if (!keyDialog.open) keyDialog.showModal();
}
hooks.unauthorized = askForKey;

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

let routed = 0; // a view that loads after another was asked for starts nothing

async function route() {
  leave();
  leave = () => {};
  const mine = ++routed;
  const [where, search] = location.hash.slice(1).split("?");
  const query = new URLSearchParams(search || "");
  const parts = (where || "/").split("/").filter(Boolean).map(decodeURIComponent);
  if (parts[0] !== "apps" || parts.length === 1) return appsView();
  if (parts.length === 2) return appView(parts[1]);
  if (parts.length === 4 && parts[2] === "users") return userView(parts[1], parts[3], query);
  if (parts.length === 6 && parts[4] === "sessions") {
    const undo = await sessionView(parts[1], parts[3], parts[5], query, route);
    if (mine === routed) leave = undo;
    else undo();
    return undefined;
  }
  return appsView();
}

function up() {
  const parts = location.hash.slice(1).split("?")[0].split("/").filter(Boolean);
  location.hash = "#/" + parts.slice(0, parts.length > 2 ? parts.length - 2 : 0).join("/");
}

/** Shown: not in a folded invocation (whose content Chromium keeps laid out, but hidden). */
function visible(element) {
  return element.checkVisibility ? element.checkVisibility() : element.getClientRects().length > 0;
}

function move(step) {
  const items = [...view.querySelectorAll("[data-nav]")].filter(visible);
  if (!items.length) return;
  const at = items.indexOf(document.activeElement);
  const next = items[Math.min(items.length - 1, Math.max(0, at < 0 ? 0 : at + step))];
  next.focus();
  next.scrollIntoView({ block: "nearest" });
}

function focused(selector) {
  return document.activeElement?.closest?.(selector);
}

document.addEventListener("keydown", (pressed) => {
  if (pressed.key === "Escape" && view.querySelector(".detail")) {
    view.querySelector(".detail button.close")?.click();
    return;
  }
  const typing = pressed.target.closest?.("input, select, textarea, dialog");
  if (typing || pressed.ctrlKey || pressed.metaKey || pressed.altKey) return;
  const actions = {
    j: () => move(1),
    k: () => move(-1),
    u: up,
    "/": () => view.querySelector("input")?.focus(),
    l: () => view.querySelector("button.live")?.click(),
    g: () => view.querySelector("form.jump-to input")?.focus(),
    t: () => view.querySelector("#tab-timeline")?.click(),
    c: () => view.querySelector("#tab-context")?.click(),
    a: () => view.querySelector("#tab-artifacts")?.click(),
    o: () => {
      const group = focused(".invocation > details");
      if (!group) return;
      group.open = !group.open;
      group.querySelector("summary").focus();
    },
    "?": () => document.getElementById("help-dialog").showModal(),
  };
  // Enter on an event opens its details (on a link or a button it does what they do).
  if (pressed.key === "Enter" && focused(".event") === document.activeElement) {
    pressed.preventDefault();
    document.activeElement.querySelector("button.details")?.click();
    return;
  }
  const action = actions[pressed.key];
  if (action) {
    pressed.preventDefault();
    action();
  }
});

window.addEventListener("hashchange", route);
route();
