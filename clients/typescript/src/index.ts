/**
 * A typed client for Sessionary. The client itself is openapi-fetch's, typed for every endpoint
 * by `schema.ts` (generated from openapi/openapi.json); this file adds what generation cannot:
 * error answers thrown as typed exceptions, reads and appends resent when their connection
 * closed under them, the ETag / If-Match pair, and paging iterators.
 */
import createClient, { type Client, type ClientOptions, type Middleware } from "openapi-fetch";
import type { components, operations, paths } from "./schema.js";

export type { components, operations, paths };
export type Schemas = components["schemas"];
export type Session = Schemas["Session"];
export type SessionPage = Schemas["SessionPage"];
export type Event = Schemas["Event"];
export type EventIn = Schemas["EventIn"];
export type EventPage = Schemas["EventPage"];
export type Problem = Schemas["Problem"];
export type ProblemCode = Problem["code"];
export type SessionaryClient = Client<paths>;

export const DEFAULT_URL = "http://127.0.0.1:8000";

export interface SessionaryOptions extends ClientOptions {
  /** Sent as `Authorization: Bearer …`. Default: SESSIONARY_API_KEY, where there is an environment. */
  apiKey?: string;
  /** How often a read or an append that got no answer is sent again (default 2). */
  retries?: number;
}

/** Reads SESSIONARY_URL / SESSIONARY_API_KEY under Node; in a browser there is no environment. */
function environment(name: string): string | undefined {
  const process = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process;
  return process?.env?.[name] || undefined;
}

/**
 * The client. `baseUrl` defaults to SESSIONARY_URL, else a local server's. Every method is
 * openapi-fetch's (`client.GET(path, {params})`, `client.POST(path, {params, body})`, …), and
 * an error answer is thrown as the `APIError` subclass its `code` names; a request that gets no
 * answer rejects with fetch's own `TypeError`, once reads and appends were sent `retries` times
 * more. A read of a session this client wrote to asks for the version its write made
 * (`minVersion`), so that a read replica never hides it.
 */
export function createSessionaryClient(options: SessionaryOptions = {}): SessionaryClient {
  const { apiKey = environment("SESSIONARY_API_KEY"), headers, retries = 2, ...rest } = options;
  const client = createClient<paths>({
    baseUrl: environment("SESSIONARY_URL") ?? DEFAULT_URL,
    ...rest,
    fetch: resending(rest.fetch ?? ((request, init) => fetch(request, init)), retries),
    headers: { ...(apiKey ? { Authorization: `Bearer ${apiKey}` } : {}), ...headers },
  });
  client.use(throwProblems, readYourWrites());
  return client;
}

/** The data of a successful answer: with `createSessionaryClient`, any other was thrown. */
export async function ok<R extends { data?: unknown; response: Response }>(
  answer: Promise<R>,
): Promise<NonNullable<R["data"]>> {
  return (await answer).data as NonNullable<R["data"]>;
}

// --- Errors ---------------------------------------------------------------------------------

/** Base of every error this package throws on purpose. */
export class SessionaryError extends Error {
  override name = this.constructor.name;
}

/** An error answer: `problem` is its RFC 9457 body (made up when the body was not one). */
export class APIError extends SessionaryError {
  readonly status: number;
  readonly code: string;
  readonly detail: string;

  constructor(
    readonly problem: Problem,
    readonly response: Response,
  ) {
    super(`${response.status} ${problem.code}: ${problem.detail}`);
    this.status = response.status;
    this.code = problem.code;
    this.detail = problem.detail;
  }
}

export class UnauthorizedError extends APIError {}
export class ForbiddenError extends APIError {}
export class NotFoundError extends APIError {}
export class SessionNotFoundError extends NotFoundError {}
export class ConflictError extends APIError {}
export class SessionAlreadyExistsError extends ConflictError {}
export class SessionClosedError extends ConflictError {}
export class EventConflictError extends ConflictError {}
export class ToolPairViolationError extends ConflictError {}
export class ToolCallsPendingError extends ConflictError {
  /** The function calls still unanswered. */
  get callIds(): string[] {
    return this.problem.callIds ?? [];
  }
}
/** If-Match named another version; nothing was written. Reload, then retry. */
export class StaleSessionError extends APIError {
  /** The session's version now. */
  get currentVersion(): number | undefined {
    return this.problem.currentVersion ?? undefined;
  }
}
export class PayloadTooLargeError extends APIError {}
export class InvalidRequestError extends APIError {
  get errors(): NonNullable<Problem["errors"]> {
    return this.problem.errors ?? [];
  }
}
export class ServiceUnavailableError extends APIError {}

type ErrorClass = new (problem: Problem, response: Response) => APIError;

const BY_CODE: Partial<Record<ProblemCode, ErrorClass>> = {
  session_not_found: SessionNotFoundError,
  session_already_exists: SessionAlreadyExistsError,
  session_closed: SessionClosedError,
  event_conflict: EventConflictError,
  tool_pair_violation: ToolPairViolationError,
  tool_calls_pending: ToolCallsPendingError,
};
// For codes this client does not know yet, and for answers that are not problems (a proxy's).
const BY_STATUS: Record<number, ErrorClass> = {
  401: UnauthorizedError,
  403: ForbiddenError,
  404: NotFoundError,
  409: ConflictError,
  412: StaleSessionError,
  413: PayloadTooLargeError,
  422: InvalidRequestError,
  503: ServiceUnavailableError,
};

/** The typed error of an error answer. */
export async function errorFor(response: Response): Promise<APIError> {
  const text = await response.text();
  let problem: Problem;
  try {
    problem = JSON.parse(text) as Problem;
    if (typeof problem?.code !== "string") throw new TypeError("not a problem");
  } catch {
    problem = {
      type: "about:blank",
      title: response.statusText,
      status: response.status,
      code: "http_error",
      detail: text.slice(0, 500),
    };
  }
  const kind = BY_CODE[problem.code] ?? BY_STATUS[response.status] ?? APIError;
  return new kind(problem, response);
}

const throwProblems: Middleware = {
  async onResponse({ response }) {
    if (!response.ok) throw await errorFor(response);
    return undefined;
  },
};

// --- Resending -------------------------------------------------------------------------------

type Fetch = (request: Request, init?: RequestInit) => Promise<Response>;

const APPEND = /^\/apps\/[^/]+\/users\/[^/]+\/sessions\/[^/]+\/events(:batch)?$/;

/**
 * Sends a read, or an append, again when fetch got no answer (its `TypeError`): most often a
 * pooled connection that the server, or a proxy, closed just as it was reused. An append is
 * safe to resend because each of its events carries an id (given here when it has none): the
 * server stores an event once, and answers a resend with the event stored. Other writes are
 * sent once.
 */
function resending(send: Fetch, retries: number): Fetch {
  return async (request, init) => {
    const append = request.method === "POST" ? APPEND.exec(new URL(request.url).pathname) : null;
    if (!append && request.method !== "GET" && request.method !== "HEAD") return send(request, init);
    const body = append ? withIds(await request.text(), append[1] !== undefined) : null;
    for (let attempt = 0; ; attempt++) {
      try {
        return await send(append ? new Request(request, { body }) : request, init);
      } catch (error) {
        if (!(error instanceof TypeError) || attempt >= retries) throw error;
        // Full jitter, so that clients that failed together do not come back together.
        const delay = Math.random() * Math.min(5000, 250 * 2 ** attempt);
        await new Promise((resolve) => setTimeout(resolve, delay));
      }
    }
  };
}

/** An append's body, each event given an id if it has none. */
function withIds(body: string, batch: boolean): string {
  if (!body) return body;
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

const SESSION_VERB = /:(fork|close|rewind|trim|reset|compact|heal|export)$/;
const SESSION_PATH = /^\/apps\/[^/]+\/users\/[^/]+\/sessions\/[^/]+/;
const READS_WITH_MIN_VERSION = /^\/apps\/[^/]+\/users\/[^/]+\/sessions\/[^/:]+(\/events)?$/;
const REMEMBERED = 10_000;

/** The session a path is about (`/apps/a/users/u/sessions/s…`, a verb stripped), if any. */
function sessionOf(pathname: string): string | undefined {
  return SESSION_PATH.exec(pathname)?.[0].replace(SESSION_VERB, "");
}

/**
 * Keeps the version each session was at after this client's last write to it (its ETag, the
 * most recent 10,000 sessions), and sends it as `minVersion` on reads of that session and its
 * events: with DATABASE_READ_URL, the server answers from the primary until the replica has it.
 */
function readYourWrites(): Middleware {
  const written = new Map<string, number>();
  return {
    async onRequest({ request }) {
      const address = new URL(request.url);
      const session = sessionOf(address.pathname);
      const version = session === undefined ? undefined : written.get(session);
      if (request.method !== "GET" || version === undefined) return undefined;
      if (!READS_WITH_MIN_VERSION.test(address.pathname)) return undefined;
      address.searchParams.set("minVersion", String(version));
      return new Request(address, request);
    },
    async onResponse({ request, response }) {
      const pathname = new URL(request.url).pathname;
      let session = sessionOf(pathname);
      if (request.method === "DELETE" && session === pathname && response.ok) {
        written.delete(session); // a new session may take its id
      }
      const version = versionOf(response);
      if (request.method === "GET" || request.method === "HEAD" || version === undefined) {
        return undefined;
      }
      if (session === undefined || /(:fork|\/children)$/.test(pathname)) {
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

/** The session version an answer's `ETag` carries (`"7"` → 7), if it has one. */
export function versionOf(response: Response): number | undefined {
  const match = /^"(\d+)"$/.exec(response.headers.get("ETag") ?? "");
  return match ? Number(match[1]) : undefined;
}

/**
 * The `If-Match` header parameter for a write that must find the session at this version: a
 * `version` (7), an `ETag` as read (`'"7"'`), or `"*"` (any version, but the session exists).
 *
 *     client.POST(path, { params: { path: ids, header: ifMatch(session.version) }, body })
 */
export function ifMatch(version: number | string): { "if-match": string } {
  const tag = typeof version === "number" ? `"${version}"` : version.trim();
  if (tag !== "*" && !/^"\d+"$/.test(tag)) {
    throw new RangeError(`ifMatch takes a version, its ETag ('"7"') or '*', not ${version}`);
  }
  return { "if-match": tag };
}

// --- Paging ---------------------------------------------------------------------------------

/** Every item of a paged listing, fetching each page as the iteration reaches it. */
export async function* paginate<Page extends { nextPageToken?: string | null }, Item>(
  fetchPage: (pageToken: string | undefined) => Promise<Page>,
  items: (page: Page) => Item[],
): AsyncGenerator<Item> {
  let token: string | undefined;
  do {
    const page = await fetchPage(token);
    yield* items(page);
    token = page.nextPageToken ?? undefined;
  } while (token !== undefined);
}

type Query<Operation extends keyof operations> = Omit<
  NonNullable<operations[Operation]["parameters"]["query"]>,
  "pageToken"
>;

/** Every session of a user (with `list_sessions`' filters), oldest update first by default. */
export function iterSessions(
  client: SessionaryClient,
  app_name: string,
  user_id: string,
  query: Query<"list_sessions"> = {},
): AsyncGenerator<Session> {
  return paginate(
    (pageToken) =>
      ok(
        client.GET("/apps/{app_name}/users/{user_id}/sessions", {
          params: { path: { app_name, user_id }, query: { ...query, pageToken } },
        }),
      ),
    (page) => page.sessions,
  );
}

/** Every event of a session (with `list_events`' filters), in `seq` order by default. */
export function iterEvents(
  client: SessionaryClient,
  app_name: string,
  user_id: string,
  session_id: string,
  query: Query<"list_events"> = {},
): AsyncGenerator<Event> {
  return paginate(
    (pageToken) =>
      ok(
        client.GET("/apps/{app_name}/users/{user_id}/sessions/{session_id}/events", {
          params: { path: { app_name, user_id, session_id }, query: { ...query, pageToken } },
        }),
      ),
    (page) => page.events,
  );
}
