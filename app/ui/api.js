// Talking to the API, with the key the user gave (kept in this tab's session storage only).

import { path } from "/ui/dom.js";

export const KEY = "sessionary.apiKey";
export const hooks = { unauthorized: () => {} }; // the page asks for a key

export class ApiError extends Error {
  constructor(status, problem) {
    super(problem.detail || `HTTP ${status}`);
    this.status = status;
    this.problem = problem;
  }
}

function headers(extra = {}) {
  const key = sessionStorage.getItem(KEY);
  return key ? { Authorization: `Bearer ${key}`, ...extra } : extra;
}

export function url(address, query = {}) {
  const found = new URL(address, location.origin);
  for (const [name, value] of Object.entries(query)) {
    for (const one of [value].flat()) {
      if (one !== undefined && one !== null && one !== "") found.searchParams.append(name, one);
    }
  }
  return found;
}

async function answer(response) {
  if (response.status === 401) hooks.unauthorized();
  if (!response.ok) {
    const problem = await response.json().catch(() => ({}));
    throw new ApiError(response.status, problem);
  }
  return response.status === 204 ? null : response.json();
}

/** A read. */
export async function api(address, query) {
  return answer(await fetch(url(address, query), { headers: headers() }));
}

/** A write: `version`, when given, is sent as `If-Match`, so that nothing is written if the
 * session changed since the page read it (a 412, shown as the problem says). */
export async function send(method, address, body, version) {
  const extra = body === undefined ? {} : { "Content-Type": "application/json" };
  if (version !== undefined && version !== null) extra["If-Match"] = `"${version}"`;
  return answer(await fetch(url(address), {
    method,
    headers: headers(extra),
    body: body === undefined ? undefined : JSON.stringify(body),
  }));
}

/** An artifact's content (`GET …/artifacts/{name}`), fetched with the key as everything is:
 * `{blob, type, size}`, `size` the whole content's even when `first` asked for its first bytes
 * only (a `Range`). A reference stored elsewhere (the API's 303 to its URI) is not followed. */
export async function artifactContent(address, query, first) {
  const extra = first ? { Range: `bytes=0-${first - 1}` } : {};
  const response = await fetch(url(address, query), { headers: headers(extra), redirect: "manual" });
  if (response.type === "opaqueredirect") {
    throw new ApiError(303, { title: "Stored elsewhere", detail: "a reference to content kept outside Sessionary." });
  }
  if (!response.ok) await answer(response); // throws the problem
  const whole = response.headers.get("Content-Range")?.split("/")[1];
  return {
    blob: await response.blob(),
    type: response.headers.get("Content-Type") || "",
    size: Number(whole ?? response.headers.get("Content-Length")),
  };
}

/** `/…/artifacts/reports/q1.pdf`: an artifact's name in a path, its `/` kept (the API takes
 * each segment percent-encoded, never an encoded `/`). */
export function artifactPath(here, name, ...rest) {
  return `${here}/artifacts/${name.split("/").map(encodeURIComponent).join("/")}${rest.join("")}`;
}

export function sessionPath(app, user, id, ...rest) {
  return path("apps", app, "users", user, "sessions", id) + rest.join("");
}

// --- What the key may do --------------------------------------------------------------------

let scope = null; // {key, answer}: the scope of the key it was asked for

/** The key's scope (`GET /auth/key`), asked once per key. */
export async function keyScope() {
  const key = sessionStorage.getItem(KEY) || "";
  if (scope?.key !== key) scope = { key, answer: api("/auth/key").catch(() => null) };
  return scope.answer;
}

/** Whether the key may write this user's sessions (with keys off, anyone may). */
export async function mayWrite(app, user) {
  const found = await keyScope();
  if (!found) return false;
  if (!found.authEnabled) return true;
  return !found.readOnly && (found.appName === null || found.appName === app)
    && (found.userId === null || found.userId === user);
}

// --- Events ---------------------------------------------------------------------------------

/** Where in a session the response to a call is: scans its events after the call's seq, a
 * page at a time (up to `pages` pages); the seq, or null. */
export async function findResponse(here, callId, afterSeq, pages = 10) {
  let token;
  for (let page = 0; page < pages; page++) {
    const found = await api(here + "/events", { afterSeq, pageSize: 200, pageToken: token });
    const hit = found.events.find((event) => responsesOf(event).some((part) => part.id === callId));
    if (hit) return hit;
    token = found.nextPageToken;
    if (!token) return null;
  }
  return null;
}

/** An event's parts that are objects (content is stored as sent: any shape may come). */
export function partsOf(event) {
  const parts = event?.content?.parts;
  return Array.isArray(parts) ? parts.filter((part) => part && typeof part === "object") : [];
}

/** An event's function calls, `{id, name, args}` each. */
export function callsOf(event) {
  return partsOf(event).map((part) => part.functionCall).filter((call) => call && typeof call === "object");
}

/** An event's function responses, `{id, name, response}` each. */
export function responsesOf(event) {
  return partsOf(event).map((part) => part.functionResponse).filter((answer) => answer && typeof answer === "object");
}

/** Reads a server-sent-event stream with fetch (EventSource cannot send the API key). */
export async function tail(address, after, signal, onEvent) {
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
        .filter((line) => line && !line.startsWith(":"))
        .map((line) => [line.slice(0, line.indexOf(":")), line.slice(line.indexOf(":") + 2)]));
      buffer = buffer.slice(end + 2);
      if (fields.event) onEvent(fields.event, JSON.parse(fields.data || "null"));
    }
  }
}
