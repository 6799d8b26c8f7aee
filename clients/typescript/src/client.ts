/**
 * `Sessionary`: every endpoint as a method taking camelCase arguments, sent through the
 * low-level client (`raw`), so with its typed errors, resends, event ids and read-your-writes
 * versions. Bodies and answers are the generated schemas' types.
 */
import {
  connect,
  ifMatch,
  ok,
  paginate,
  retryPolicy,
  type CallOptions,
  type FetchFor,
  type IfMatch,
  type RetryPolicy,
  type SessionaryClient,
  type SessionaryOptions,
  textBody,
} from "./raw.js";
import type { operations } from "./schema.js";
import { follow, type Frame, type Open, type StreamOptions } from "./stream.js";
import type {
  Appended,
  AppPage,
  AppSummary,
  AppUsage,
  ChildCreate,
  CompactionStrategy,
  Content,
  ContextView,
  Event,
  EventIn,
  EventPage,
  EventsRemoved,
  Healed,
  Health,
  Outcome,
  QueuedEvent,
  Readiness,
  Schemas,
  SearchHit,
  SearchPage,
  Session,
  SessionChange,
  SessionCreate,
  SessionFork,
  SessionPage,
  SessionsChange,
  SessionUpdate,
  State,
  ToolCall,
  Trimmed,
  UserPage,
  UserSummary,
} from "./types.js";

/** A write's: with `ifMatch`, it writes only if the session is still at that version, else
 * it throws `StaleSessionError` and writes nothing. */
export interface WriteOptions extends CallOptions {
  ifMatch?: IfMatch;
}

type Query<Operation extends keyof operations> = NonNullable<operations[Operation]["parameters"]["query"]>;
/** A listing of sessions' filters, its `label=key:value` ones as one object, all to match. */
type SessionFilters<Operation extends "list_sessions" | "list_app_sessions"> = Omit<
  Query<Operation>,
  "label"
> & {
  labels?: Record<string, string>;
} & CallOptions;
/** An iterator's options: its listing's, but the page token. */
type AllPages<Options> = Omit<Options, "pageToken">;

const SESSIONS = "/apps/{app_name}/users/{user_id}/sessions";
const SESSION = `${SESSIONS}/{session_id}` as const;
// The events after which nothing more can happen to a session: its stream ends.
const FINAL: ReadonlySet<string> = new Set(["closed", "deleted"]);
// What an append's status says it did.
const APPEND_OUTCOMES: Readonly<Record<number, Appended["outcome"]>> = {
  201: "stored",
  200: "replayed",
  202: "acknowledged",
};

function at(appName: string, userId: string, sessionId: string) {
  return { app_name: appName, user_id: userId, session_id: sessionId };
}

/** A write's parameters: the session's path and, when a version is given, its If-Match. */
function writeTo(appName: string, userId: string, sessionId: string, version: IfMatch | undefined) {
  return {
    path: at(appName, userId, sessionId),
    header: version === undefined ? undefined : ifMatch(version),
  };
}

/** An operation's own options (its query or body), without the call's. */
function fields<Options extends CallOptions>(options: Options): Omit<Options, keyof CallOptions> {
  const { signal, timeout, headers, maxRetries, ...rest } = options;
  return rest;
}

function labelFilters(labels: Record<string, string> | undefined): string[] | undefined {
  return labels && Object.entries(labels).map(([key, value]) => `${key}:${value}`);
}

/** A stream's body, as `open` gives it to `follow`. */
async function bodyOf(answer: Promise<{ data?: ReadableStream<Uint8Array> | null }>) {
  return (await answer).data ?? undefined;
}

/**
 * A Sessionary client. `baseUrl` and `apiKey` default to SESSIONARY_URL and SESSIONARY_API_KEY
 * under Node (else `http://127.0.0.1:8000`, no key).
 *
 * Errors are thrown as `APIError` subclasses named by the problem's `code`; a request that got
 * no answer as `APIConnectionError`. Reads, appends (each event is given an `id` if it has
 * none, so a resend stores it once) and the other idempotent writes are resent after a lost
 * answer or a 502-504, `retries` times; every request is resent when its connection was
 * refused. After a write, reads of that session ask for the version it made (`minVersion`).
 */
export class Sessionary {
  /** The low-level client (openapi-fetch's, typed by the spec), for anything not wrapped. */
  readonly raw: SessionaryClient;
  readonly #fetchFor: FetchFor;
  readonly #policy: RetryPolicy;
  readonly #headers: Record<string, string>;

  constructor(options: SessionaryOptions = {}) {
    const { client, fetchFor } = connect(options);
    this.raw = client;
    this.#fetchFor = fetchFor;
    this.#policy = retryPolicy(options);
    this.#headers = options.headers ?? {};
  }

  /** What openapi-fetch takes of a call's options: its signal, its headers, and a fetch that
   * resends as its timeout and maxRetries say. */
  #call({ signal, headers, timeout, maxRetries }: CallOptions) {
    return { signal, headers, fetch: this.#fetchFor({ timeout, maxRetries }) };
  }

  /** One session's methods without its app, user and id: `chat.appendEvent(event)`. */
  session(appName: string, userId: string, sessionId: string): SessionHandle {
    const methods = Object.entries(BOUND).map(([name, method]) => {
      const call = this[method] as (...args: unknown[]) => unknown;
      return [name, (...rest: unknown[]) => call.call(this, appName, userId, sessionId, ...rest)];
    });
    return { client: this, appName, userId, sessionId, ...Object.fromEntries(methods) } as SessionHandle;
  }

  // --- Sessions -------------------------------------------------------------------------------

  /** A new session, with the server's id unless `sessionId`; with `ttl` (seconds) or
   * `expireTime` (epoch seconds), one that expires. */
  async createSession(
    appName: string,
    userId: string,
    options: SessionCreate & CallOptions = {},
  ): Promise<Session> {
    const body = fields(options);
    return ok(
      this.raw.POST(SESSIONS, {
        params: { path: { app_name: appName, user_id: userId } },
        body,
        ...this.#call(options),
      }),
    );
  }

  /** The session with its events (`numRecentEvents`, `afterTimestamp`); with `untilSeq`, as it
   * was at that seq. */
  async getSession(
    appName: string,
    userId: string,
    sessionId: string,
    options: Query<"get_session"> & CallOptions = {},
  ): Promise<Session> {
    const query = fields(options);
    return ok(this.raw.GET(SESSION, {
      params: { path: at(appName, userId, sessionId), query },
      ...this.#call(options),
    }));
  }

  /** One page of a user's sessions, without events. */
  async listSessions(
    appName: string,
    userId: string,
    options: SessionFilters<"list_sessions"> = {},
  ): Promise<SessionPage> {
    const { labels, ...query } = fields(options);
    const path = { app_name: appName, user_id: userId };
    return ok(
      this.raw.GET(SESSIONS, {
        params: { path, query: { ...query, label: labelFilters(labels) } },
        ...this.#call(options),
      }),
    );
  }

  /** Every session of a user, fetching pages as the iteration reaches them. */
  sessions(
    appName: string,
    userId: string,
    options: AllPages<SessionFilters<"list_sessions">> = {},
  ): AsyncGenerator<Session, void, undefined> {
    return paginate(
      (pageToken) => this.listSessions(appName, userId, { ...options, pageToken }),
      (page) => page.sessions,
    );
  }

  /** One page of the sessions of every user of the app. */
  async listAppSessions(
    appName: string,
    options: SessionFilters<"list_app_sessions"> = {},
  ): Promise<SessionPage> {
    const { labels, ...query } = fields(options);
    const path = { app_name: appName };
    return ok(
      this.raw.GET("/apps/{app_name}/sessions", {
        params: { path, query: { ...query, label: labelFilters(labels) } },
        ...this.#call(options),
      }),
    );
  }

  /** Every session of every user of the app. */
  appSessions(
    appName: string,
    options: AllPages<SessionFilters<"list_app_sessions">> = {},
  ): AsyncGenerator<Session, void, undefined> {
    return paginate(
      (pageToken) => this.listAppSessions(appName, { ...options, pageToken }),
      (page) => page.sessions,
    );
  }

  /** Changes what is given in one write: `stateDelta` (recorded as an event by `user`),
   * `displayName` (null clears it), `labels` (`{}` clears them), `ttl` or `expireTime`. */
  async updateSession(
    appName: string,
    userId: string,
    sessionId: string,
    changes: SessionUpdate,
    options: WriteOptions = {},
  ): Promise<Session> {
    const params = writeTo(appName, userId, sessionId, options.ifMatch);
    return ok(this.raw.PATCH(SESSION, { params, body: changes, ...this.#call(options) }));
  }

  /** Records `stateDelta` as an event authored by `user`. */
  async updateState(
    appName: string,
    userId: string,
    sessionId: string,
    stateDelta: State,
    options: WriteOptions = {},
  ): Promise<Session> {
    return this.updateSession(appName, userId, sessionId, { stateDelta }, options);
  }

  /** Deletes the session and its events (app and user state stay). */
  async deleteSession(
    appName: string,
    userId: string,
    sessionId: string,
    options: WriteOptions = {},
  ): Promise<void> {
    const params = writeTo(appName, userId, sessionId, options.ifMatch);
    await this.raw.DELETE(SESSION, { params, ...this.#call(options) });
  }

  // --- Events ---------------------------------------------------------------------------------

  /**
   * Stores `event`, given an `id` if it has none; the event as stored, with its `seq`. A resend
   * after a lost answer gets the stored event back, even if `ifMatch` has moved on since. A
   * `partial` event is acknowledged and not stored: it comes back as sent, without `seq`.
   * `appendEventOutcome` tells, besides, which of these happened.
   */
  async appendEvent(
    appName: string,
    userId: string,
    sessionId: string,
    event: EventIn,
    options: WriteOptions = {},
  ): Promise<Event> {
    return (await this.appendEventOutcome(appName, userId, sessionId, event, options)).event;
  }

  /** As `appendEvent`, and whether the event was stored now, was stored before (a resend:
   * nothing written), or is a partial one, acknowledged and not stored. */
  async appendEventOutcome(
    appName: string,
    userId: string,
    sessionId: string,
    event: EventIn,
    options: WriteOptions = {},
  ): Promise<Appended> {
    const params = writeTo(appName, userId, sessionId, options.ifMatch);
    const { data, response } = await this.raw.POST(`${SESSION}/events`, {
      params,
      body: event,
      ...this.#call(options),
    });
    return { event: data as Event, outcome: APPEND_OUTCOMES[response.status]! };
  }

  /** Stores `events` at consecutive seqs, all or none (`partial` ones skipped). */
  async appendEvents(
    appName: string,
    userId: string,
    sessionId: string,
    events: EventIn[],
    options: WriteOptions = {},
  ): Promise<Event[]> {
    const params = writeTo(appName, userId, sessionId, options.ifMatch);
    const answer = await ok(
      this.raw.POST(`${SESSION}/events:batch`, { params, body: { events }, ...this.#call(options) }),
    );
    return answer.events as Event[];
  }

  /** One page of the session's events, by seq. */
  async listEvents(
    appName: string,
    userId: string,
    sessionId: string,
    options: Query<"list_events"> & CallOptions = {},
  ): Promise<EventPage> {
    const query = fields(options);
    return ok(
      this.raw.GET(`${SESSION}/events`, {
        params: { path: at(appName, userId, sessionId), query },
        ...this.#call(options),
      }),
    );
  }

  /** Every event of the session (`afterSeq`, `afterTimestamp`, `beforeTimestamp`, `order`). */
  events(
    appName: string,
    userId: string,
    sessionId: string,
    options: AllPages<Query<"list_events">> & CallOptions = {},
  ): AsyncGenerator<Event, void, undefined> {
    return paginate(
      (pageToken) => this.listEvents(appName, userId, sessionId, { ...options, pageToken }),
      (page) => page.events,
    );
  }

  /** Removes an event, and the events answering its function calls. */
  async removeEvent(
    appName: string,
    userId: string,
    sessionId: string,
    eventId: string,
    options: WriteOptions = {},
  ): Promise<EventsRemoved> {
    const { path, header } = writeTo(appName, userId, sessionId, options.ifMatch);
    const params = { path: { ...path, event_id: eventId }, header };
    return ok(this.raw.DELETE(`${SESSION}/events/{event_id}`, { params, ...this.#call(options) }));
  }

  /** Replaces an event's `content` (a redaction, say); the event as stored. */
  async rewriteEvent(
    appName: string,
    userId: string,
    sessionId: string,
    eventId: string,
    content: Content,
    options: WriteOptions = {},
  ): Promise<Event> {
    const { path, header } = writeTo(appName, userId, sessionId, options.ifMatch);
    const params = { path: { ...path, event_id: eventId }, header };
    return ok(
      this.raw.PATCH(`${SESSION}/events/{event_id}`, { params, body: { content }, ...this.#call(options) }),
    );
  }

  // --- Live streams ---------------------------------------------------------------------------

  /**
   * The session's changes as they are committed: after `afterSeq` first (read back from the
   * log; 0: the whole session), else from now. A lost connection is resumed after the last
   * frame received, losing and repeating nothing; the iteration ends after `closed` or
   * `deleted`, or when `signal` aborts. Each connection is opened with the call's `headers`,
   * `timeout` and `maxRetries`; a lost one is opened again `maxRetries` times in a row.
   */
  streamEvents(
    appName: string,
    userId: string,
    sessionId: string,
    options: StreamOptions & { afterSeq?: number } = {},
  ): AsyncGenerator<SessionChange, void, undefined> {
    const { afterSeq, ...stream } = options;
    const path = at(appName, userId, sessionId);
    const call = this.#call(stream);
    const open: Open = (position, signal) => {
      const header = position === undefined ? {} : { "last-event-id": String(position) };
      return bodyOf(
        this.raw.GET(`${SESSION}/events:stream`, {
          params: { path, header },
          parseAs: "stream",
          ...call,
          signal,
        }),
      );
    };
    return this.#follow<SessionChange>(open, afterSeq, FINAL, stream);
  }

  /** A user's sessions as they are created, updated, closed and deleted, from now. A lost
   * connection is opened again; what happened meanwhile is not sent (list to catch up). */
  streamSessions(
    appName: string,
    userId: string,
    options: StreamOptions = {},
  ): AsyncGenerator<SessionsChange, void, undefined> {
    const path = { app_name: appName, user_id: userId };
    const call = this.#call(options);
    const open: Open = (_, signal) =>
      bodyOf(this.raw.GET(`${SESSIONS}:stream`, { params: { path }, parseAs: "stream", ...call, signal }));
    return this.#follow<SessionsChange>(open, undefined, new Set(), options);
  }

  /** As `streamSessions`, for every user of the app. */
  streamAppSessions(
    appName: string,
    options: StreamOptions = {},
  ): AsyncGenerator<SessionsChange, void, undefined> {
    const path = { app_name: appName };
    const call = this.#call(options);
    const open: Open = (_, signal) =>
      bodyOf(
        this.raw.GET("/apps/{app_name}/sessions:stream", {
          params: { path },
          parseAs: "stream",
          ...call,
          signal,
        }),
      );
    return this.#follow<SessionsChange>(open, undefined, new Set(), options);
  }

  #follow<Change extends Frame>(
    open: Open,
    position: number | undefined,
    ends: ReadonlySet<string>,
    options: StreamOptions,
  ): AsyncGenerator<Change, void, undefined> {
    const policy = { ...this.#policy, retries: options.maxRetries ?? this.#policy.retries };
    const requestId = new Headers({ ...this.#headers, ...options.headers }).get("X-Request-ID") ?? undefined;
    const frames = follow(open, position, ends, policy, options, requestId);
    // The frames are the server's: their shapes are the ones `types.ts` names.
    return frames as AsyncGenerator<Change, void, undefined>;
  }

  // --- Forks, children and history ------------------------------------------------------------

  /** A new session with this one's events up to `atSeq`, or before `beforeInvocationId`'s
   * first event, or all of them, and its state then; named `sessionId` if given. */
  async fork(
    appName: string,
    userId: string,
    sessionId: string,
    options: SessionFork & CallOptions = {},
  ): Promise<Session> {
    const body = fields(options);
    return ok(
      this.raw.POST(`${SESSION}:fork`, {
        params: { path: at(appName, userId, sessionId) },
        body,
        ...this.#call(options),
      }),
    );
  }

  /** A child session for a sub-agent, named `sessionId` if given; with `functionCallId`,
   * closing it answers that call of the parent. */
  async createChild(
    appName: string,
    userId: string,
    sessionId: string,
    options: ChildCreate & CallOptions = {},
  ): Promise<Session> {
    const body = fields(options);
    return ok(
      this.raw.POST(`${SESSION}/children`, {
        params: { path: at(appName, userId, sessionId) },
        body,
        ...this.#call(options),
      }),
    );
  }

  /** One page of the session's forks and children, oldest first, without events. */
  async listChildren(
    appName: string,
    userId: string,
    sessionId: string,
    options: Query<"list_children"> & CallOptions = {},
  ): Promise<SessionPage> {
    const query = fields(options);
    return ok(
      this.raw.GET(`${SESSION}/children`, {
        params: { path: at(appName, userId, sessionId), query },
        ...this.#call(options),
      }),
    );
  }

  /** Every fork and child of the session. */
  children(
    appName: string,
    userId: string,
    sessionId: string,
    options: AllPages<Query<"list_children">> & CallOptions = {},
  ): AsyncGenerator<Session, void, undefined> {
    return paginate(
      (pageToken) => this.listChildren(appName, userId, sessionId, { ...options, pageToken }),
      (page) => page.sessions,
    );
  }

  /** Closes the session to writes; a child made for a function call answers it with
   * `{outcome, result}`. */
  async close(
    appName: string,
    userId: string,
    sessionId: string,
    outcome: Outcome,
    options: { result?: unknown } & WriteOptions = {},
  ): Promise<Session> {
    const params = writeTo(appName, userId, sessionId, options.ifMatch);
    const body = { outcome, result: options.result };
    return ok(this.raw.POST(`${SESSION}:close`, { params, body, ...this.#call(options) }));
  }

  /** The session's ancestors, root first, without events. */
  async lineage(
    appName: string,
    userId: string,
    sessionId: string,
    options: CallOptions = {},
  ): Promise<Session[]> {
    const params = { path: at(appName, userId, sessionId) };
    return (await ok(this.raw.GET(`${SESSION}/lineage`, { params, ...this.#call(options) }))).sessions;
  }

  /** ADK's rewind: appends the event that undoes `beforeInvocationId` and all after it (state
   * included); that event. */
  async rewind(
    appName: string,
    userId: string,
    sessionId: string,
    beforeInvocationId: string,
    options: WriteOptions = {},
  ): Promise<Event> {
    const params = writeTo(appName, userId, sessionId, options.ifMatch);
    return ok(
      this.raw.POST(`${SESSION}:rewind`, { params, body: { beforeInvocationId }, ...this.#call(options) }),
    );
  }

  /** Removes all but the newest `keepLast` events (and the answers to removed calls). */
  async trim(
    appName: string,
    userId: string,
    sessionId: string,
    keepLast: number,
    options: WriteOptions = {},
  ): Promise<Trimmed> {
    const params = writeTo(appName, userId, sessionId, options.ifMatch);
    return ok(this.raw.POST(`${SESSION}:trim`, { params, body: { keepLast }, ...this.#call(options) }));
  }

  /** Removes every event and the session's own state. */
  async reset(
    appName: string,
    userId: string,
    sessionId: string,
    options: WriteOptions = {},
  ): Promise<Trimmed> {
    const params = writeTo(appName, userId, sessionId, options.ifMatch);
    return ok(this.raw.POST(`${SESSION}:reset`, { params, body: {}, ...this.#call(options) }));
  }

  // --- Context, tool calls, queued input ------------------------------------------------------

  /** What a model should see next: the live events, compactions applied, the newest that fit
   * `tokenBudget`, function calls never apart from their answers. */
  async context(
    appName: string,
    userId: string,
    sessionId: string,
    options: Query<"get_context"> & CallOptions = {},
  ): Promise<ContextView> {
    const query = fields(options);
    return ok(
      this.raw.GET(`${SESSION}/context`, {
        params: { path: at(appName, userId, sessionId), query },
        ...this.#call(options),
      }),
    );
  }

  /** Appends one compaction event over the live events older than the newest `keepLast`: a
   * `summary` (your text), `truncate`, or `observationMask`; that event. */
  async compact(
    appName: string,
    userId: string,
    sessionId: string,
    strategy: CompactionStrategy,
    options: Omit<Schemas["SessionCompact"], "strategy"> & WriteOptions = {},
  ): Promise<Event> {
    const { ifMatch: version, ...rest } = fields(options);
    const params = writeTo(appName, userId, sessionId, version);
    return ok(this.raw.POST(`${SESSION}:compact`, {
      params,
      body: { strategy, ...rest },
      ...this.#call(options),
    }));
  }

  /** The session's function calls in order, each `answered`, `pending` or `orphaned`
   * (unanswered past `timeoutSeconds`). */
  async toolCalls(
    appName: string,
    userId: string,
    sessionId: string,
    options: Query<"list_tool_calls"> & CallOptions = {},
  ): Promise<ToolCall[]> {
    const query = fields(options);
    const params = { path: at(appName, userId, sessionId), query };
    return (await ok(this.raw.GET(`${SESSION}/toolCalls`, { params, ...this.#call(options) }))).toolCalls;
  }

  /** Answers each orphaned function call with an error response, in one write. */
  async heal(
    appName: string,
    userId: string,
    sessionId: string,
    options: Schemas["SessionHeal"] & WriteOptions = {},
  ): Promise<Healed> {
    const { ifMatch: version, ...body } = fields(options);
    const params = writeTo(appName, userId, sessionId, version);
    return ok(this.raw.POST(`${SESSION}:heal`, { params, body, ...this.#call(options) }));
  }

  /** Queues an event apart from the log (a user typing while a turn runs), given an `id` if
   * it has none, so that a resend queues it once; the event as queued. */
  async queueEvent(
    appName: string,
    userId: string,
    sessionId: string,
    event: EventIn,
    options: CallOptions = {},
  ): Promise<QueuedEvent> {
    const params = { path: at(appName, userId, sessionId) };
    return ok(this.raw.POST(`${SESSION}/pending`, { params, body: event, ...this.#call(options) }));
  }

  /** The queued events, in the order they came. */
  async pending(
    appName: string,
    userId: string,
    sessionId: string,
    options: CallOptions = {},
  ): Promise<QueuedEvent[]> {
    const params = { path: at(appName, userId, sessionId) };
    return (await ok(this.raw.GET(`${SESSION}/pending`, { params, ...this.#call(options) }))).events;
  }

  /** Empties the queue without appending it. */
  async clearPending(
    appName: string,
    userId: string,
    sessionId: string,
    options: CallOptions = {},
  ): Promise<void> {
    await this.raw.DELETE(`${SESSION}/pending`, {
      params: { path: at(appName, userId, sessionId) },
      ...this.#call(options),
    });
  }

  /** Appends the queue in order, in one write; the events as stored (none when it was
   * empty). `ToolCallsPendingError` while a function call is unanswered, unless `force`. */
  async promotePending(
    appName: string,
    userId: string,
    sessionId: string,
    options: Schemas["PendingPromote"] & WriteOptions = {},
  ): Promise<Event[]> {
    const { ifMatch: version, ...body } = fields(options);
    const params = writeTo(appName, userId, sessionId, version);
    const answer = this.raw.POST(`${SESSION}/pending:promote`, { params, body, ...this.#call(options) });
    return (await ok(answer)).events;
  }

  // --- Export and import ----------------------------------------------------------------------

  /** The session as NDJSON, exactly: a header line (`SessionExport`), then its events as
   * stored. What `import` takes. */
  async export(
    appName: string,
    userId: string,
    sessionId: string,
    options: CallOptions = {},
  ): Promise<string> {
    const params = { path: at(appName, userId, sessionId) };
    // NDJSON, not the JSON document that `Accept: application/json` would choose.
    const headers = { Accept: "application/x-ndjson", ...options.headers };
    return ok(this.raw.GET(`${SESSION}:export`, { params, parseAs: "text", ...this.#call({ ...options, headers }) }));
  }

  /** Stores an export under this app and user exactly as it was (id, seqs, version, times),
   * all or nothing; the same export again writes nothing. The session, without events. */
  async import(appName: string, userId: string, ndjson: string, options: CallOptions = {}): Promise<Session> {
    return ok(
      this.raw.POST(`${SESSIONS}:import`, {
        params: { path: { app_name: appName, user_id: userId } },
        // The spec types an NDJSON body as one of its lines; this body is all of them.
        body: ndjson,
        bodySerializer: () => textBody(ndjson),
        ...this.#call(options),
        headers: { ...options.headers, "Content-Type": "application/x-ndjson" },
      }),
    );
  }

  // --- Search, usage, browsing ----------------------------------------------------------------

  /** One page of the app's events matching `q` (web-search syntax: `refund order`, `"full
   * refund"`, `refund or return`, `refund -partial`), best first. */
  async search(
    appName: string,
    q: string,
    options: Omit<Query<"search_events">, "q"> & CallOptions = {},
  ): Promise<SearchPage> {
    const query = fields(options);
    return ok(
      this.raw.GET("/apps/{app_name}/search", {
        params: { path: { app_name: appName }, query: { ...query, q } },
        ...this.#call(options),
      }),
    );
  }

  /** Every hit of a search, fetching pages as the iteration reaches them. */
  searchHits(
    appName: string,
    q: string,
    options: AllPages<Omit<Query<"search_events">, "q">> & CallOptions = {},
  ): AsyncGenerator<SearchHit, void, undefined> {
    return paginate(
      (pageToken) => this.search(appName, q, { ...options, pageToken }),
      (page) => page.hits,
    );
  }

  /** The token counts of the app's events, by user and in all. */
  async usage(appName: string, options: Query<"get_app_usage"> & CallOptions = {}): Promise<AppUsage> {
    const query = fields(options);
    return ok(
      this.raw.GET("/apps/{app_name}/usage", {
        params: { path: { app_name: appName }, query },
        ...this.#call(options),
      }),
    );
  }

  /** One page of the apps that have sessions, by name. */
  async listApps(options: Query<"list_apps"> & CallOptions = {}): Promise<AppPage> {
    const query = fields(options);
    return ok(this.raw.GET("/apps", { params: { query }, ...this.#call(options) }));
  }

  /** Every app that has sessions. */
  apps(
    options: AllPages<Query<"list_apps">> & CallOptions = {},
  ): AsyncGenerator<AppSummary, void, undefined> {
    return paginate(
      (pageToken) => this.listApps({ ...options, pageToken }),
      (page) => page.apps,
    );
  }

  /** One page of the app's users that have sessions, by id. */
  async listUsers(appName: string, options: Query<"list_users"> & CallOptions = {}): Promise<UserPage> {
    const query = fields(options);
    return ok(
      this.raw.GET("/apps/{app_name}/users", {
        params: { path: { app_name: appName }, query },
        ...this.#call(options),
      }),
    );
  }

  /** Every user of the app that has sessions. */
  users(
    appName: string,
    options: AllPages<Query<"list_users">> & CallOptions = {},
  ): AsyncGenerator<UserSummary, void, undefined> {
    return paginate(
      (pageToken) => this.listUsers(appName, { ...options, pageToken }),
      (page) => page.users,
    );
  }

  // --- App and user state ---------------------------------------------------------------------

  /** The app's state, keys without their `app:` prefix. */
  async getAppState(appName: string, options: CallOptions = {}): Promise<State> {
    const params = { path: { app_name: appName } };
    return (await ok(this.raw.GET("/apps/{app_name}/state", { params, ...this.#call(options) }))).state;
  }

  /** Merges `stateDelta` (keys without prefix) into the app's state; the state now. */
  async updateAppState(appName: string, stateDelta: State, options: CallOptions = {}): Promise<State> {
    const params = { path: { app_name: appName } };
    const answer = this.raw.PATCH("/apps/{app_name}/state", {
      params,
      body: { stateDelta },
      ...this.#call(options),
    });
    return (await ok(answer)).state;
  }

  /** The user's state, keys without their `user:` prefix. */
  async getUserState(appName: string, userId: string, options: CallOptions = {}): Promise<State> {
    const params = { path: { app_name: appName, user_id: userId } };
    const answer = this.raw.GET("/apps/{app_name}/users/{user_id}/state", { params, ...this.#call(options) });
    return (await ok(answer)).state;
  }

  /** Merges `stateDelta` (keys without prefix) into the user's state; the state now. */
  async updateUserState(
    appName: string,
    userId: string,
    stateDelta: State,
    options: CallOptions = {},
  ): Promise<State> {
    const params = { path: { app_name: appName, user_id: userId } };
    const answer = this.raw.PATCH("/apps/{app_name}/users/{user_id}/state", {
      params,
      body: { stateDelta },
      ...this.#call(options),
    });
    return (await ok(answer)).state;
  }

  // --- Operations -----------------------------------------------------------------------------

  /** The process answers (`/healthz`); says nothing of the database. */
  async health(options: CallOptions = {}): Promise<Health> {
    return ok(this.raw.GET("/healthz", { ...this.#call(options) }));
  }

  /** The database answers, at the expected schema (`/readyz`); else `ServiceUnavailableError`. */
  async readiness(options: CallOptions = {}): Promise<Readiness> {
    return ok(this.raw.GET("/readyz", { ...this.#call(options) }));
  }
}

/** The methods of a session handle, each the client's method of the same meaning. */
const BOUND = {
  get: "getSession",
  update: "updateSession",
  updateState: "updateState",
  delete: "deleteSession",
  appendEvent: "appendEvent",
  appendEventOutcome: "appendEventOutcome",
  appendEvents: "appendEvents",
  listEvents: "listEvents",
  events: "events",
  removeEvent: "removeEvent",
  rewriteEvent: "rewriteEvent",
  streamEvents: "streamEvents",
  fork: "fork",
  createChild: "createChild",
  listChildren: "listChildren",
  children: "children",
  close: "close",
  lineage: "lineage",
  rewind: "rewind",
  trim: "trim",
  reset: "reset",
  context: "context",
  compact: "compact",
  toolCalls: "toolCalls",
  heal: "heal",
  queueEvent: "queueEvent",
  pending: "pending",
  clearPending: "clearPending",
  promotePending: "promotePending",
  export: "export",
} as const satisfies Record<string, keyof Sessionary>;

/** A method of the client, without its first three arguments: app, user and session id. */
type Bound<Method> = Method extends (
  appName: string,
  userId: string,
  sessionId: string,
  ...rest: infer Rest
) => infer Result
  ? (...rest: Rest) => Result
  : never;

/**
 * One session of a client, so that calls stop repeating its app, user and id:
 * `chat.appendEvent(event)` is `client.appendEvent(app, user, id, event)`, `chat.get()` is
 * `getSession`, `chat.update()` `updateSession`, `chat.delete()` `deleteSession`.
 */
export type SessionHandle = {
  readonly client: Sessionary;
  readonly appName: string;
  readonly userId: string;
  readonly sessionId: string;
} & { readonly [Name in keyof typeof BOUND]: Bound<Sessionary[(typeof BOUND)[Name]]> };
