// Building the page: elements, links, times, counts. Everything is built with DOM nodes,
// never innerHTML: the events are user data.

export const view = document.getElementById("view");

/** An element: `h("a", {href: "#/"}, "text", child, …)`; `on…` attributes are listeners. */
export function h(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (name === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(name, value === true ? "" : value);
  }
  node.append(...children.flat(Infinity).filter((child) => child !== null && child !== undefined && child !== false));
  return node;
}

/** A link within the explorer (`j`/`k` move between them). */
export function link(href, ...children) {
  return h("a", { href, dataset: { nav: "" } }, ...children);
}

/** `/apps/a/users/u/…`, each segment percent-encoded. */
export function path(...segments) {
  return "/" + segments.map(encodeURIComponent).join("/");
}

export function hashOf(...segments) {
  return "#" + path(...segments);
}

export function sessionHash(app, user, id, seq) {
  return hashOf("apps", app, "users", user, "sessions", id) + (seq ? `?seq=${seq}` : "");
}

// --- Counts and times, in the reader's locale ------------------------------------------------

const number = new Intl.NumberFormat();

/** "1 session", "2 sessions", "1,500 events". */
export function plural(count, one, many = `${one}s`) {
  return `${number.format(count)} ${count === 1 ? one : many}`;
}

export function formatNumber(value) {
  return number.format(value);
}

const absolute = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium" });
const clock = new Intl.DateTimeFormat(undefined, { timeStyle: "medium" });
const relative = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });
const UNITS = [["year", 31536000], ["month", 2592000], ["week", 604800], ["day", 86400],
  ["hour", 3600], ["minute", 60], ["second", 1]];

/** "3 minutes ago", "in 2 hours", "now": how far `seconds` (epoch) is from now. */
export function ago(seconds) {
  const difference = seconds - Date.now() / 1000;
  if (Math.abs(difference) < 10) return relative.format(0, "second");
  const [unit, size] = UNITS.find(([, length]) => Math.abs(difference) >= length);
  return relative.format(Math.round(difference / size), unit);
}

/** A time with its date, in the reader's locale, and a relative hint: "Nov 25, 2026, 3:13:48 PM
 * (3 minutes ago)". */
export function stamp(seconds, { hint = true } = {}) {
  if (typeof seconds !== "number") return "";
  const moment = new Date(seconds * 1000);
  return h("span", { class: "stamp" },
    h("time", { datetime: moment.toISOString(), title: moment.toISOString() }, absolute.format(moment)),
    hint ? h("span", { class: "ago" }, ` (${ago(seconds)})`) : null);
}

/** "3 minutes ago", the full time in its title. */
export function relativeTime(seconds) {
  if (typeof seconds !== "number") return "";
  const at = new Date(seconds * 1000);
  return h("time", { datetime: at.toISOString(), title: absolute.format(at) }, ago(seconds));
}

/** A time as short as it can be read: its time of day when it is today, else its date too;
 * the full time and how long ago in its title. */
export function moment(seconds) {
  if (typeof seconds !== "number") return "";
  const at = new Date(seconds * 1000);
  const today = at.toDateString() === new Date().toDateString();
  return h("time", { datetime: at.toISOString(), title: `${absolute.format(at)} (${ago(seconds)})` },
    today ? clock.format(at) : absolute.format(at));
}

/** How long something took: "350 ms", "2.5 s", "3 min 5 s", "1 h 2 min". */
export function duration(seconds) {
  if (!(seconds >= 0)) return "";
  if (seconds < 1) return `${Math.round(seconds * 1000)} ms`;
  if (seconds < 60) return `${Number(seconds.toFixed(seconds < 10 ? 1 : 0))} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min${seconds % 60 >= 1 ? ` ${Math.floor(seconds % 60)} s` : ""}`;
  return `${Math.floor(minutes / 60)} h${minutes % 60 ? ` ${minutes % 60} min` : ""}`;
}

const BYTE_UNITS = ["KiB", "MiB", "GiB", "TiB"];
const oneDecimal = new Intl.NumberFormat(undefined, { maximumFractionDigits: 1 });

/** A size: "1 byte", "512 bytes", "12.3 KiB", "4 MiB". */
export function size(count) {
  if (!(count >= 1024)) return plural(count, "byte");
  let value = count;
  let unit = -1;
  while (value >= 1024 && unit < BYTE_UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${oneDecimal.format(value)} ${BYTE_UNITS[unit]}`;
}

/** JSON on one line, cut at `max` characters. */
export function json(value, max = 300) {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > max ? text.slice(0, max) + "…" : text;
}

// --- The page -------------------------------------------------------------------------------

/** What went wrong, as the API's problem says it. */
export function failure(error, title = "Could not load this") {
  const problem = error?.problem || {};
  return h("div", { role: "alert", class: "error" },
    h("strong", {}, problem.title || title), " ",
    problem.detail || String(error?.message || error));
}

let notice = null; // what the last action did, said once on the next page

export function setNotice(text) {
  notice = text;
}

export function show(title, ...content) {
  document.title = `${title} · Sessionary`;
  const said = notice ? h("p", { class: "notice", role: "status" }, notice) : null;
  notice = null;
  view.replaceChildren(...[said, ...content].filter(Boolean));
  view.focus({ preventScroll: true });
}

export function crumbs(app, user, session) {
  const trail = [link("#/", "apps")];
  if (app) trail.push(" / ", link(hashOf("apps", app), app));
  if (user) trail.push(" / ", link(hashOf("apps", app, "users", user), user));
  if (session) trail.push(" / ", h("span", {}, session));
  document.getElementById("crumbs").replaceChildren(...trail);
}

/** Scrolls to an element and flashes it. */
export function flash(target) {
  if (!target) return;
  target.scrollIntoView({ block: "center" });
  target.classList.add("flash");
  setTimeout(() => target.classList.remove("flash"), 1500);
}

/** Which scope a state key is in: `app:` and `user:` keys are shared, the rest the session's. */
export function scopeOf(key) {
  if (key.startsWith("app:")) return "app";
  if (key.startsWith("user:")) return "user";
  if (key.startsWith("temp:")) return "temp";
  return "session";
}

/** A state (or a delta) as three panels, one per scope, in the scopes' colours. */
export function scopes(state, { label = "State", empty = "empty" } = {}) {
  const grouped = { session: [], user: [], app: [] };
  for (const [key, value] of Object.entries(state || {})) grouped[scopeOf(key)]?.push([key, value]);
  return Object.entries(grouped).map(([scope, entries]) =>
    h("div", { class: `scope scope-${scope}`, dataset: { scope }, "aria-label": `${label}: ${scope}` },
      h("h3", {}, scope === "session" ? "session" : `${scope}:`),
      entries.length ? h("dl", {}, entries.map(([key, value]) => [h("dt", {}, key), h("dd", {}, json(value))]))
        : h("p", { class: "muted" }, empty)));
}
