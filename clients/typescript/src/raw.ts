/**
 * The low-level client: openapi-fetch's, typed for every endpoint by `schema.ts` (generated
 * from openapi/openapi.json), with what generation cannot give: error answers thrown as typed
 * errors, requests resent when that is safe (after the server's `Retry-After`), event ids, a
 * timeout, and read-your-writes versions. `Sessionary` is built on it; `sessionary.raw` is one.
 */
import createClient, { type Client, type Middleware } from "openapi-fetch";

import {
  APIConnectionError,
  APITimeoutError,
  InvalidRequestError,
  errorFor,
  problemOf,
  type Problem,
} from "./errors.js";
import type { operations, paths } from "./schema.js";
import type { Event, Session } from "./types.js";

export type SessionaryClient = Client<paths>;
export type Fetch = (request: Request, init?: RequestInit) => Promise<Response>;

export const DEFAULT_URL = "http://127.0.0.1:8000";

/** This client's version, named in the User-Agent of its requests outside a browser. */
export const VERSION = "0.1.0";

export interface SessionaryOptions {
  /** Default: SESSIONARY_URL where there is an environment (Node), else `DEFAULT_URL`. */
  baseUrl?: string;
  /** Sent as `Authorization: Bearer …`. Default: SESSIONARY_API_KEY, where there is an environment. */
  apiKey?: string;
  /** Sent with every request (a `User-Agent` among them replaces the client's). */
  headers?: Record<string, string>;
  /** How many times a request is sent again when that is safe (default 2). */
  retries?: number;
  /** Milliseconds before the first resend, doubled for each next one, jittered (default 250). */
  backoff?: number;
  /** Milliseconds to wait for an answer to begin, per attempt (default 10 000; `Infinity`: no limit). */
  timeout?: number;
  /** The fetch to send with (default: the global one). */
  fetch?: Fetch;
}

/** What every method takes last, with its own options: how that one call is sent. */
export interface CallOptions {
  /** Aborts the call, which then rejects with the signal's reason and is not resent. */
  signal?: AbortSignal;
  /** Milliseconds to wait for an answer to begin, per attempt, in place of the client's
   * `timeout` (`Infinity`: no limit). */
  timeout?: number;
  /** Sent with this call, over the client's `headers`: an `X-Request-ID`, say, which the
   * server takes as the request's id, in its logs and on errors. */
  headers?: Record<string, string>;
  /** How many times this call may be sent again when that is safe, in place of the client's
   * `retries`; a stream's, how many times in a row it may be opened again. */
  maxRetries?: number;
}

/** How often and how soon to send again; also followed by streams when they reconnect. */
export interface RetryPolicy {
  retries: number;
  backoff: number;
}

export function retryPolicy(options: SessionaryOptions): RetryPolicy {
  return { retries: options.retries ?? 2, backoff: options.backoff ?? 250 };
}

/** Reads SESSIONARY_URL / SESSIONARY_API_KEY under Node; in a browser there is no environment. */
function environment(name: string): string | undefined {
  const process = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process;
  return process?.env?.[name] || undefined;
}

/**
 * The low-level client: `client.GET(path, { params })`, `client.POST(path, { params, body })`…
 * An error answer is thrown as the `APIError` subclass its `code` names, and a request that
 * got no answer as an `APIConnectionError`, after the resends `retries` allows.
 */
export function createSessionaryClient(options: SessionaryOptions = {}): SessionaryClient {
  return connect(options).client;
}

/** The fetch of one call: the client's, resending as the call's `timeout` and `maxRetries` say,
 * sending an `upload`'s body as it is (undefined when it says nothing: the client's own). */
export type FetchFor = (
  call: Pick<CallOptions, "timeout" | "maxRetries"> & { upload?: Upload },
) => Fetch | undefined;

/**
 * A body sent as the caller gave it rather than read into a string first (an artifact's
 * bytes, which may be large, or a stream). Bytes can be sent again by each attempt; a stream
 * can be read once, so a request with one is sent once.
 */
export interface Upload {
  readonly replayable: boolean;
  /** One attempt's body. `sent` settles once fetch has read the last byte of it;
   * `failure()` is the error of the caller's own source, if reading it failed. */
  open(): { body: BodyInit; sent: Promise<void>; failure: () => unknown };
}

/** A low-level client, and the fetch of a call with a timeout or retries of its own. */
export function connect(options: SessionaryOptions): { client: SessionaryClient; fetchFor: FetchFor } {
  const baseUrl = options.baseUrl ?? environment("SESSIONARY_URL") ?? DEFAULT_URL;
  const apiKey = options.apiKey ?? environment("SESSIONARY_API_KEY");
  // Routes are matched without the base URL's own path (`https://host/sessionary`).
  const base = new URL(baseUrl, "http://relative").pathname.replace(/\/$/, "");
  const routeOf = (url: string) => new URL(url).pathname.slice(base.length);
  const send = options.fetch ?? ((request, init) => fetch(request, init));
  const policy = { ...retryPolicy(options), timeout: options.timeout ?? 10_000 };
  const client = createClient<paths>({
    baseUrl,
    pathSerializer: pathWithIds,
    bodySerializer: jsonBody,
    fetch: resending(send, routeOf, policy),
    headers: {
      ...userAgent(),
      ...(apiKey ? { Authorization: `Bearer ${apiKey}` } : {}),
      ...options.headers,
    },
  });
  client.use(throwProblems, readYourWrites(routeOf));
  const fetchFor: FetchFor = ({ timeout, maxRetries, upload }) =>
    timeout === undefined && maxRetries === undefined && upload === undefined
      ? undefined
      : resending(
          send,
          routeOf,
          { ...policy, timeout: timeout ?? policy.timeout, retries: maxRetries ?? policy.retries },
          upload,
        );
  return { client, fetchFor };
}

/** The client named, under Node (and Deno, Bun), as servers' logs show it. Not in a browser:
 * there the browser's own is sent, and naming another would need the server's leave (CORS). */
function userAgent(): Record<string, string> {
  const process = (globalThis as { process?: { versions?: { node?: string } } }).process;
  return process?.versions?.node ? { "User-Agent": `sessionary-node/${VERSION}` } : {};
}

/**
 * A path's `{name}`s filled in with their ids, each percent-encoded: ids may hold `/`, `?`, `#`
 * or spaces. An id `.` or `..` is refused here, as the server refuses it (422): URLs resolve dot
 * segments, encoded ones (`%2E%2E`) too, so it would reach another route (removing event `..`
 * would delete its session). So is an id with a lone surrogate, which UTF-8 cannot encode.
 *
 * An artifact's name (the slot `{name}`) keeps its `/`s, which separate its segments as a
 * folder's do (`reports/q1.pdf`); each segment is checked and encoded as an id is.
 */
export function pathWithIds(pathname: string, ids: Record<string, unknown>): string {
  return pathname.replace(/\{(\w+)\}/g, (slot, name: string) => {
    const id = ids[name];
    if (id === undefined || id === null) return slot;
    const segments = name === "name" ? String(id).split("/") : [String(id)];
    return segments.map((segment) => pathSegment(segment, name)).join("/");
  });
}

function pathSegment(id: string, name: string): string {
  if (id === "." || id === "..") {
    throw refused("an id must not be `.` or `..`, which URLs resolve away", "path", name);
  }
  if (LONE_SURROGATE.test(id)) throw refused("an id must be valid UTF-8", "path", name);
  return encodeURIComponent(id);
}

// A lone surrogate (with `u`, a surrogate pair is one code point): fetch would send U+FFFD in
// its place, so that two ids would be one.
const LONE_SURROGATE = /\p{Cs}/u;
// One as JSON.stringify writes it, `\udXXX`, after an even number of backslashes (an odd one
// would escape the last); it writes nothing else so.
const ESCAPED_LONE_SURROGATE = /(?:^|[^\\])(?:\\\\)*\\ud[89a-f]/;

/** A request's JSON body; one with a lone surrogate in a string, which the server would refuse,
 * is refused here. */
function jsonBody(body: unknown): string {
  return jsonText(body, "body");
}

/** A value as JSON, refused (`loc` saying where it goes) if a string in it has a lone surrogate. */
export function jsonText(value: unknown, ...loc: string[]): string {
  const json = JSON.stringify(value);
  if (ESCAPED_LONE_SURROGATE.test(json)) throw refused("strings must be valid UTF-8", ...loc);
  return json;
}

/** A body of text (an import's NDJSON), refused as `jsonBody` refuses one. */
export function textBody(text: string): string {
  if (LONE_SURROGATE.test(text)) throw refused("strings must be valid UTF-8", "body");
  return text;
}

/** The error of a request this client does not send, since the server would refuse it: a 422 as
 * the server's, `loc` naming what is wrong ("path", "session_id"). */
function refused(why: string, ...loc: string[]): InvalidRequestError {
  const problem: Problem = {
    type: "urn:sessionary:problem:validation_error",
    title: "Invalid input",
    status: 422,
    detail: `${loc.join(".")}: ${why} (not sent)`,
    code: "validation_error",
    errors: [{ loc, msg: why, type: "value_error" }],
  };
  const answer = new Response(JSON.stringify(problem), {
    status: 422,
    headers: { "content-type": "application/problem+json" },
  });
  return new InvalidRequestError(problem, answer);
}

/** The data of a successful answer: with `createSessionaryClient`, any other was thrown. */
export async function ok<R extends { data?: unknown; response: Response }>(
  answer: Promise<R>,
): Promise<NonNullable<R["data"]>> {
  return (await answer).data as NonNullable<R["data"]>;
}

const throwProblems: Middleware = {
  async onResponse({ request, response }) {
    // A call that takes redirects itself (a download: a reference answers 303) gets them.
    const redirect = response.type === "opaqueredirect" || (response.status >= 300 && response.status < 400);
    if (!response.ok && !(redirect && request.redirect === "manual")) throw await errorFor(response);
    return undefined;
  },
};

// --- Resending -------------------------------------------------------------------------------

const SESSION = String.raw`^/apps/[^/]+/users/[^/]+/sessions/[^/:]+`;
// Writes that may be sent twice with the effect of once. Appends and queued events, because
// each event carries an id (given below when it has none) and the server stores an id once,
// answering a resend with the event stored; an import, because the same export again writes
// nothing; emptying the queue, and merging the same app or user state keys, twice as once.
// A recall, which is a read sent as a POST for its body, and adding a session to memory,
// which adds only what is new, as a heal answers only what is orphaned.
const WITH_EVENTS = new RegExp(`${SESSION}/(events(:batch)?|pending)$`);
const RECALL_OR_REMEMBER = String.raw`^/apps/[^/]+(/users/[^/]+)?/memories:recall$|${SESSION}:remember$`;
const IDEMPOTENT: Record<string, RegExp> = {
  POST: new RegExp(
    `${WITH_EVENTS.source}|^/apps/[^/]+/users/[^/]+(/sessions)?:import$|${RECALL_OR_REMEMBER}`,
  ),
  DELETE: new RegExp(`${SESSION}/pending$`),
  PATCH: /^\/apps\/[^/]+(\/users\/[^/]+)?\/state$/,
};
// A second heal answers nothing, so it is safe to resend, but for one under If-Match (412).
const HEAL = new RegExp(`${SESSION}:heal$`);

function idempotent(request: Request, route: string): boolean {
  const { method, headers } = request;
  if (method === "GET" || method === "HEAD") return true;
  if (method === "POST" && HEAL.test(route)) return !headers.has("If-Match");
  return IDEMPOTENT[method]?.test(route) ?? false;
}

// The causes of fetch's TypeError when no connection was made: the request never left, so
// sending it again cannot do anything twice, whatever it is.
const NOT_SENT = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "UND_ERR_CONNECT_TIMEOUT",
]);

function neverSent(error: unknown): boolean {
  const cause = error instanceof TypeError ? (error.cause as { code?: unknown } | undefined) : undefined;
  return typeof cause?.code === "string" && NOT_SENT.has(cause.code);
}

/** A 429, 502, 503 or 504 that the same request may not meet again (a search past the
 * server's time limit will be). */
async function transient(response: Response): Promise<boolean> {
  if (![429, 502, 503, 504].includes(response.status)) return false;
  return (await problemOf(response.clone())).code !== "search_timeout";
}

/** Milliseconds to wait before attempt `attempt + 1`: full jitter, so that clients that failed
 * together do not come back together. */
export function backoffDelay(policy: RetryPolicy, attempt: number): number {
  return Math.random() * Math.min(5000, policy.backoff * 2 ** attempt);
}

/** The most a resend waits for what `Retry-After` asks: a longer wait is cut to it, and the
 * request sent again then, rather than a caller kept waiting for an hour a proxy asked for. */
const MAX_RETRY_AFTER = 60_000;

/** Milliseconds a `Retry-After` asks to wait (seconds, or an HTTP date), at most a minute;
 * undefined when it asks none that can be read, and the client's backoff is waited. */
export function retryAfter(value: string | null): number | undefined {
  if (!value?.trim()) return undefined;
  const seconds = Number(value);
  if (seconds < 0) return undefined;
  const wait = Number.isNaN(seconds) ? Date.parse(value) - Date.now() : seconds * 1000;
  return Number.isNaN(wait) ? undefined : Math.min(Math.max(wait, 0), MAX_RETRY_AFTER);
}

/** Waits `ms`; rejects with the signal's reason if it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    signal?.throwIfAborted();
    const aborted = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", aborted);
      resolve();
    }, ms);
    signal?.addEventListener("abort", aborted, { once: true });
  });
}

/**
 * Sends a request again when that is safe: any request that never reached the server (the
 * connection was refused), and a read or an idempotent write (above) that got no answer
 * (fetch's `TypeError`: most often a pooled connection that the server or a proxy closed just
 * as it was reused; or the timeout) or a 429 or 502-504, after the wait its `Retry-After` asks
 * if it has one. When the resends run out, a request without an answer is an
 * `APIConnectionError`. An abort of the caller's signal is never resent.
 *
 * An `upload`'s body is sent as it is, each attempt's from its source: bytes again, a stream
 * once (so never resent). Its timeout counts from when its last byte was read, as its answer
 * can only begin then.
 */
function resending(
  send: Fetch,
  routeOf: (url: string) => string,
  policy: RetryPolicy & { timeout: number },
  upload?: Upload,
): Fetch {
  return async (request, init) => {
    const route = routeOf(request.url);
    const safe = idempotent(request, route);
    let body = upload || request.body === null ? undefined : await request.text();
    if (body && request.method === "POST" && WITH_EVENTS.test(route)) {
      body = withIds(body, route.endsWith(":batch"));
    }
    const retries = upload && !upload.replayable ? 0 : policy.retries;
    for (let attempt = 0; ; attempt++) {
      const retry = attempt < retries;
      const outgoing = upload?.open();
      let wait: number | undefined;
      try {
        // `duplex`, which fetch needs for a stream, is not in TypeScript's RequestInit yet.
        const sending = outgoing
          ? new Request(request, { body: outgoing.body, duplex: "half" } as RequestInit)
          : new Request(request, { body });
        const response = await within(policy.timeout, send, sending, init, outgoing?.sent);
        if (!(safe && retry && (await transient(response)))) return response;
        await response.body?.cancel();
        wait = retryAfter(response.headers.get("Retry-After"));
      } catch (error) {
        if (request.signal.aborted) throw error;
        const failure = outgoing?.failure();
        if (failure !== undefined) throw failure; // the caller's own stream failed: its error
        if (!(error instanceof TypeError || error instanceof APITimeoutError)) throw error;
        if (!(retry && (safe || neverSent(error)))) throw connectionError(request, error);
      }
      await sleep(wait ?? backoffDelay(policy, attempt), request.signal);
    }
  };
}

/** `send(request)`, rejected with an `APITimeoutError` if no answer began within `timeout` ms
 * (of `sent` settling, when given: an upload's answer begins once its body is sent). */
async function within(
  timeout: number,
  send: Fetch,
  request: Request,
  init?: RequestInit,
  sent?: Promise<void>,
): Promise<Response> {
  if (!Number.isFinite(timeout)) return send(request, init);
  const timer = new AbortController();
  let answered = false;
  let clock: ReturnType<typeof setTimeout> | undefined;
  const start = () => {
    if (!answered) clock = setTimeout(() => timer.abort(), timeout);
  };
  if (sent) void sent.then(start);
  else start();
  try {
    return await send(
      new Request(request, { signal: AbortSignal.any([request.signal, timer.signal]) }),
      init,
    );
  } catch (error) {
    if (!timer.signal.aborted || request.signal.aborted) throw error;
    throw new APITimeoutError(`${request.method} ${request.url}: no answer within ${timeout} ms`, {
      cause: error,
      requestId: request.headers.get("X-Request-ID") ?? undefined,
    });
  } finally {
    answered = true;
    clearTimeout(clock);
  }
}

function connectionError(request: Request, error: TypeError | APITimeoutError): APIConnectionError {
  if (error instanceof APITimeoutError) return error;
  const code = (error.cause as { code?: unknown } | undefined)?.code;
  const why = typeof code === "string" ? `${error.message} (${code})` : error.message;
  return new APIConnectionError(`${request.method} ${request.url}: ${why}`, {
    cause: error,
    requestId: request.headers.get("X-Request-ID") ?? undefined,
  });
}

/** An append's or a queued event's body, each event given an id if it has none. */
function withIds(body: string, batch: boolean): string {
  const sent = JSON.parse(body);
  for (const event of batch ? (sent?.events ?? []) : [sent]) {
    if (event && typeof event === "object" && !event.id) event.id = newId();
  }
  return JSON.stringify(sent);
}

function newId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16)); // randomUUID needs a secure context
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

// --- Read your writes ------------------------------------------------------------------------

const SESSION_OF = new RegExp(SESSION);
const READS_WITH_MIN_VERSION = new RegExp(`${SESSION}(/events)?$`);
// The writes that make a session outside a session's path: a create, an import. The ETag of
// any other write outside one is no session's version (a memory's revision).
const NEW_SESSION = /^\/apps\/[^/]+\/users\/[^/]+\/sessions(:import)?$/;
const REMEMBERED = 10_000;

/**
 * Keeps the version each session was at after this client's last write to it (its ETag, the
 * most recent 10,000 sessions), and sends it as `minVersion` on reads of that session and its
 * events: with DATABASE_READ_URL, the server answers from the primary until the replica has it.
 */
function readYourWrites(routeOf: (url: string) => string): Middleware {
  const written = new Map<string, number>();
  return {
    async onRequest({ request }) {
      const route = routeOf(request.url);
      const version = written.get(SESSION_OF.exec(route)?.[0] ?? "");
      if (request.method !== "GET" || version === undefined || !READS_WITH_MIN_VERSION.test(route)) {
        return undefined;
      }
      const address = new URL(request.url);
      const asked = Number(address.searchParams.get("minVersion") ?? 0);
      address.searchParams.set("minVersion", String(Math.max(version, asked)));
      return new Request(address, request);
    },
    async onResponse({ request, response }) {
      const route = routeOf(request.url);
      let session = SESSION_OF.exec(route)?.[0];
      if (request.method === "DELETE" && session === route && response.ok) {
        written.delete(session); // a new session may take its id
      }
      const version = versionOf(response);
      if (request.method === "GET" || request.method === "HEAD" || version === undefined) {
        return undefined;
      }
      if (session === undefined && !NEW_SESSION.test(route)) return undefined;
      if (session === undefined || /(:fork|\/children)$/.test(route)) {
        // A new session (a create, an import, a fork, a child): the answer names it.
        const made = (await response.clone().json()) as Session;
        session = ["/apps", made.appName, "users", made.userId, "sessions", made.id]
          .map((segment, index) => (index ? encodeURIComponent(segment) : segment))
          .join("/");
      }
      const known = written.get(session) ?? 0;
      written.delete(session); // set again, as the most recent
      written.set(session, Math.max(version, known));
      if (written.size > REMEMBERED) written.delete(written.keys().next().value!);
      return undefined;
    },
  };
}

// --- Versions: ETag and If-Match --------------------------------------------------------------

/** A version as `If-Match` takes it: a session's `version` or a memory's `revision` (7), an
 * `ETag` as read (`'"7"'`), or `"*"` (any version, but the session or memory exists). */
export type IfMatch = number | string;

/** The version an answer's `ETag` carries (`"7"` → 7: a session's version, a memory's
 * revision), if it has one. */
export function versionOf(response: Response): number | undefined {
  const match = /^"(\d+)"$/.exec(response.headers.get("ETag") ?? "");
  return match ? Number(match[1]) : undefined;
}

/**
 * The `If-Match` header parameter of a raw client's write that must find the session (or the
 * memory) at this version:
 *
 *     client.raw.POST(path, { params: { path: ids, header: ifMatch(session.version) }, body })
 */
export function ifMatch(version: IfMatch): { "if-match": string } {
  const tag = typeof version === "number" ? `"${version}"` : version.trim();
  if (tag !== "*" && !/^"\d+"$/.test(tag)) {
    throw new RangeError(`ifMatch takes a version, its ETag ('"7"') or '*', not ${version}`);
  }
  return { "if-match": tag };
}

// --- Paging ---------------------------------------------------------------------------------

/** Every item of a paged listing, fetching each page as the iteration reaches it. */
export async function* paginate<Page extends { nextPageToken: string | null }, Item>(
  fetchPage: (pageToken: string | undefined) => Promise<Page>,
  items: (page: Page) => Item[],
): AsyncGenerator<Item, void, undefined> {
  let token: string | undefined;
  do {
    const page: Page = await fetchPage(token);
    yield* items(page);
    token = page.nextPageToken ?? undefined;
  } while (token !== undefined);
}

type Query<Operation extends keyof operations> = Omit<
  NonNullable<operations[Operation]["parameters"]["query"]>,
  "pageToken"
>;

/** Every session of a user, over a raw client (`Sessionary#sessions` does it for you). */
export function iterSessions(
  client: SessionaryClient,
  app_name: string,
  user_id: string,
  query: Query<"list_sessions"> = {},
): AsyncGenerator<Session, void, undefined> {
  const path = { app_name, user_id };
  return paginate(
    (pageToken) =>
      ok(
        client.GET("/apps/{app_name}/users/{user_id}/sessions", {
          params: { path, query: { ...query, pageToken } },
        }),
      ),
    (page) => page.sessions,
  );
}

/** Every event of a session, over a raw client (`Sessionary#events` does it for you). */
export function iterEvents(
  client: SessionaryClient,
  app_name: string,
  user_id: string,
  session_id: string,
  query: Query<"list_events"> = {},
): AsyncGenerator<Event, void, undefined> {
  const path = { app_name, user_id, session_id };
  return paginate(
    (pageToken) =>
      ok(
        client.GET("/apps/{app_name}/users/{user_id}/sessions/{session_id}/events", {
          params: { path, query: { ...query, pageToken } },
        }),
      ),
    (page) => page.events,
  );
}
