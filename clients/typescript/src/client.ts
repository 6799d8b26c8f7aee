/**
 * `Sessionary`: every endpoint as a method taking camelCase arguments, sent through the
 * low-level client (`raw`), so with its typed errors, resends, event ids and read-your-writes
 * versions. Bodies and answers are the generated schemas' types.
 */
import {
  contentOf,
  mediaTypeOf,
  metadataHeader,
  rangeHeader,
  uploadOf,
  type ArtifactContent,
  type ArtifactData,
  type ByteRange,
} from "./artifacts.js";
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
  type Upload,
} from "./raw.js";
import type { operations } from "./schema.js";
import { follow, type Frame, type Open, type StreamOptions } from "./stream.js";
import type {
  AppErasure,
  Appended,
  AppPage,
  AppSummary,
  AppUsage,
  ArtifactPage,
  ArtifactPart,
  ArtifactVersion,
  ArtifactVersionPage,
  AuditPage,
  AuditRecord,
  ChildCreate,
  CompactionStrategy,
  Content,
  ContextView,
  Event,
  EventCount,
  EventIn,
  EventPage,
  EmbeddingsStatus,
  Erasure,
  EventsRemoved,
  Healed,
  Health,
  KeyScope,
  Memory,
  MemoryCreate,
  MemoryPage,
  MemoryRevision,
  MemoryRevisionPage,
  MemoryUpdate,
  Outcome,
  QueuedEvent,
  Readiness,
  RecallRequest,
  RecallResult,
  Remembered,
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
  UserImport,
  UserPage,
  UserSummary,
} from "./types.js";

/** A write's: with `ifMatch`, it writes only if the session is still at that version, else
 * it throws `StaleSessionError` and writes nothing. */
export interface WriteOptions extends CallOptions {
  ifMatch?: IfMatch;
}

/** A memory write's: with `ifMatch` (the memory's `revision`, or its `ETag` as read), it
 * changes the memory only if it is still at that revision, else it throws `StaleMemoryError`
 * and changes nothing. */
export interface MemoryWriteOptions extends CallOptions {
  ifMatch?: IfMatch;
}

/** An upload's: the media type its content is served with (default: a `Blob`'s own type, a
 * string's `text/plain; charset=utf-8`, else `application/octet-stream`), custom metadata (any
 * JSON object) and ADK's `displayName`. */
export interface UploadOptions extends CallOptions {
  mimeType?: string;
  customMetadata?: Record<string, unknown>;
  displayName?: string;
}

/** A download's: which version (the newest without it) and which bytes of it (all without it). */
export interface DownloadOptions extends CallOptions {
  version?: number;
  range?: ByteRange;
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

const USER = "/apps/{app_name}/users/{user_id}";
const SESSIONS = `${USER}/sessions` as const;
const SESSION = `${SESSIONS}/{session_id}` as const;
// The events after which nothing more can happen to a session: its stream ends.
const FINAL: ReadonlySet<string> = new Set(["closed", "deleted"]);
const endsSession = (frame: Frame): boolean => FINAL.has(frame.event);
// A user's stream ends at `erased` (the user's, or the whole app's): the server ends it.
const endsUser = (frame: Frame): boolean => frame.event === "erased";
// An app's stream ends at the app's `erased` (`userId` null); a user's is told, and it goes on.
const endsApp = (frame: Frame): boolean =>
  frame.event === "erased" && (frame.data as { userId?: string | null } | null)?.userId == null;
// What an append's status says it did.
const APPEND_OUTCOMES: Readonly<Record<number, Appended["outcome"]>> = {
  201: "stored",
  200: "replayed",
  202: "acknowledged",
};

function at(appName: string, userId: string, sessionId: string) {
  return { app_name: appName, user_id: userId, session_id: sessionId };
}

/** The route of an artifact operation of a session or, with `sessionId` null, its user's twin
 * (`…_user_artifact…`). The two take and answer the same, so the session's types serve both. */
function artifactRoute<Route extends string>(
  sessionId: string | null,
  route: Route,
): `${typeof SESSION}${Route}` {
  return `${sessionId === null ? USER : SESSION}${route}` as `${typeof SESSION}${Route}`;
}

/** The ids of an artifact route (a user's has no `{session_id}`: it goes unused there). */
function artifactAt(appName: string, userId: string, sessionId: string | null, name?: string) {
  return { app_name: appName, user_id: userId, session_id: sessionId ?? "", name: name ?? "" };
}

const USER_MEMORIES = `${USER}/memories` as const;
const USER_MEMORY = `${USER_MEMORIES}/{memory_id}` as const;
const APP_MEMORIES = "/apps/{app_name}/memories";
const APP_MEMORY = `${APP_MEMORIES}/{memory_id}` as const;

/** The If-Match header of a memory write, when a revision is given. */
function revisionMatch(revision: IfMatch | undefined) {
  return revision === undefined ? undefined : ifMatch(revision);
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
   * resends as its timeout and maxRetries say (and sends an upload's body as it is). */
  #call({ signal, headers, timeout, maxRetries }: CallOptions, upload?: Upload) {
    return { signal, headers, fetch: this.#fetchFor({ timeout, maxRetries, upload }) };
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

  /** How many events the session holds, and the seqs of its oldest and newest, without
   * reading them. */
  async countEvents(
    appName: string,
    userId: string,
    sessionId: string,
    options: CallOptions = {},
  ): Promise<EventCount> {
    const params = { path: at(appName, userId, sessionId) };
    return ok(this.raw.GET(`${SESSION}/events:count`, { params, ...this.#call(options) }));
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
    return this.#follow<SessionChange>(open, afterSeq, endsSession, stream);
  }

  /** A user's sessions as they are created, updated, closed and deleted, from now. A lost
   * connection is opened again; what happened meanwhile is not sent (list to catch up). The
   * iteration ends after `erased`: the user (`data.userId`), or the whole app (`null`), was
   * erased, after each of the user's sessions' `deleted`. */
  streamSessions(
    appName: string,
    userId: string,
    options: StreamOptions = {},
  ): AsyncGenerator<SessionsChange, void, undefined> {
    const path = { app_name: appName, user_id: userId };
    const call = this.#call(options);
    const open: Open = (_, signal) =>
      bodyOf(this.raw.GET(`${SESSIONS}:stream`, { params: { path }, parseAs: "stream", ...call, signal }));
    return this.#follow<SessionsChange>(open, undefined, endsUser, options);
  }

  /** As `streamSessions`, for every user of the app; a user's `erased` is told and the
   * iteration goes on, the app's (`data.userId` `null`) ends it. */
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
    return this.#follow<SessionsChange>(open, undefined, endsApp, options);
  }

  #follow<Change extends Frame>(
    open: Open,
    position: number | undefined,
    ends: (frame: Frame) => boolean,
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

  /** Everything of the user of the app as NDJSON, from one snapshot: their state, each session
   * as `export` gives it, their `user:` artifacts, their memories (nothing at all for a user
   * with nothing stored). Streamed: the answer's body as it arrives, never held whole (an
   * export may be larger than memory), for `importUser` to take as it is, or to write to a
   * file. Resent as any read until it begins; a connection lost while it is read makes the
   * stream fail. */
  async exportUser(
    appName: string,
    userId: string,
    options: CallOptions = {},
  ): Promise<ReadableStream<Uint8Array>> {
    const params = { path: { app_name: appName, user_id: userId } };
    const headers = { Accept: "application/x-ndjson", ...options.headers };
    const answer = this.raw.GET(`${USER}:export`, {
      params,
      parseAs: "stream",
      ...this.#call({ ...options, headers }),
    });
    return (await bodyOf(answer)) ?? new Response(new Uint8Array()).body!;
  }

  /**
   * Stores a user's export (`exportUser`'s NDJSON) under this app and user as it was, all or
   * nothing, in one transaction: its sessions, state (merged: its keys win), `user:` artifacts
   * and memories. Streamed: bytes (`Uint8Array`, `Blob`, a string as UTF-8) or a stream
   * (`ReadableStream`, such as `exportUser`'s, or any async iterable of `Uint8Array`s). What it
   * created and what was there already the same: the same export again creates nothing, so
   * bytes are sent again after a lost answer; a stream, read as it is sent, is sent once.
   * Anything stored under the same id and different throws a 409, and nothing is imported
   * (`SessionAlreadyExistsError`, `MemoryAlreadyExistsError`, `ConflictError`).
   */
  async importUser(
    appName: string,
    userId: string,
    data: ArtifactData,
    options: CallOptions = {},
  ): Promise<UserImport> {
    const headers = { ...options.headers, "Content-Type": "application/x-ndjson" };
    return ok(
      this.raw.POST(`${USER}:import`, {
        params: { path: { app_name: appName, user_id: userId } },
        // Sent as it is by the call's fetch (`uploadOf`): not as JSON, never read into a string.
        body: "",
        bodySerializer: () => undefined,
        ...this.#call({ ...options, headers }, uploadOf(data)),
      }),
    );
  }

  // --- Artifacts ------------------------------------------------------------------------------
  // Each serves a session's names and its user's `user:` names, or, with `sessionId` null, the
  // user's alone (the `…_user_artifact…` operations). A name's `/`s separate its segments, as a
  // folder's do.

  /** One page of the newest version of each artifact name, by name; with `untilSeq`, as the
   * session was at that seq. */
  async listArtifacts(
    appName: string,
    userId: string,
    sessionId: string | null,
    options: Query<"list_artifacts"> & CallOptions = {},
  ): Promise<ArtifactPage> {
    const query = fields(options);
    return ok(
      this.raw.GET(artifactRoute(sessionId, "/artifacts"), {
        params: { path: artifactAt(appName, userId, sessionId), query },
        ...this.#call(options),
      }),
    );
  }

  /** The newest version of every artifact name, fetching pages as the iteration reaches them. */
  artifacts(
    appName: string,
    userId: string,
    sessionId: string | null,
    options: AllPages<Query<"list_artifacts">> & CallOptions = {},
  ): AsyncGenerator<ArtifactVersion, void, undefined> {
    return paginate(
      (pageToken) => this.listArtifacts(appName, userId, sessionId, { ...options, pageToken }),
      (page) => page.artifacts,
    );
  }

  /** Saves the next version of `name` from ADK's `Part`: `inlineData` (base64), `text`, or
   * `fileData` (a reference by URI, no bytes). Read whole by the server, within its body limit:
   * upload large files instead. The version's record. */
  async saveArtifact(
    appName: string,
    userId: string,
    sessionId: string | null,
    name: string,
    artifact: ArtifactPart,
    options: { customMetadata?: Record<string, unknown> } & CallOptions = {},
  ): Promise<ArtifactVersion> {
    const body = { filename: name, artifact, customMetadata: options.customMetadata };
    return ok(
      this.raw.POST(artifactRoute(sessionId, "/artifacts"), {
        params: { path: artifactAt(appName, userId, sessionId) },
        body,
        ...this.#call(options),
      }),
    );
  }

  /**
   * Saves the next version of `name` from `data`, streamed: bytes (`Uint8Array`, `Blob`, a
   * string as UTF-8) or a stream (`ReadableStream`, any async iterable of `Uint8Array`s), up to
   * the server's limit (512 MiB by default). Bytes are sent again if the connection was refused;
   * a stream, read as it is sent, is sent once. The timeout counts from the last byte sent. The
   * version's record.
   */
  async uploadArtifact(
    appName: string,
    userId: string,
    sessionId: string | null,
    name: string,
    data: ArtifactData,
    options: UploadOptions = {},
  ): Promise<ArtifactVersion> {
    const { mimeType, customMetadata, displayName } = options;
    const headers: Record<string, string> = { ...options.headers, "Content-Type": mimeType ?? mediaTypeOf(data) };
    if (customMetadata) headers["Artifact-Metadata"] = metadataHeader(customMetadata);
    return ok(
      this.raw.POST(artifactRoute(sessionId, "/artifacts/{name}"), {
        params: { path: artifactAt(appName, userId, sessionId, name), query: { displayName } },
        // Sent as it is by the call's fetch (`uploadOf`): not as JSON, never read into a string.
        body: "",
        bodySerializer: () => undefined,
        ...this.#call({ ...options, headers }, uploadOf(data)),
      }),
    );
  }

  /** A version's content (the newest, or `version`), or the bytes of it `range` names, read
   * whole, with its media type, version and SHA-256; for a reference, its URI. `openArtifact`
   * streams it instead. */
  async downloadArtifact(
    appName: string,
    userId: string,
    sessionId: string | null,
    name: string,
    options: DownloadOptions = {},
  ): Promise<ArtifactContent> {
    return contentOf(await this.openArtifact(appName, userId, sessionId, name, options));
  }

  /** The answer to a download, its body not read yet: `response.body` streams the content (200,
   * or 206 for a `range`), with its `Content-Type`, `ETag` (its SHA-256) and `Artifact-Version`;
   * a reference answers 303, its URI the `Location`. Resent as any read until it begins. */
  async openArtifact(
    appName: string,
    userId: string,
    sessionId: string | null,
    name: string,
    options: DownloadOptions = {},
  ): Promise<Response> {
    const { version, range } = options;
    const { response } = await this.raw.GET(artifactRoute(sessionId, "/artifacts/{name}"), {
      params: {
        path: artifactAt(appName, userId, sessionId, name),
        query: { version },
        header: range === undefined ? undefined : { Range: rangeHeader(range) },
      },
      parseAs: "stream",
      redirect: "manual", // a reference's URI is for the caller to follow, or not
      ...this.#call(options),
    });
    return response;
  }

  /** One page of the versions of `name`, oldest first, each with its record. */
  async listArtifactVersions(
    appName: string,
    userId: string,
    sessionId: string | null,
    name: string,
    options: Query<"list_artifact_versions"> & CallOptions = {},
  ): Promise<ArtifactVersionPage> {
    const query = fields(options);
    return ok(
      this.raw.GET(artifactRoute(sessionId, "/artifacts/{name}/versions"), {
        params: { path: artifactAt(appName, userId, sessionId, name), query },
        ...this.#call(options),
      }),
    );
  }

  /** Every version of `name`, oldest first. */
  artifactVersions(
    appName: string,
    userId: string,
    sessionId: string | null,
    name: string,
    options: AllPages<Query<"list_artifact_versions">> & CallOptions = {},
  ): AsyncGenerator<ArtifactVersion, void, undefined> {
    return paginate(
      (pageToken) => this.listArtifactVersions(appName, userId, sessionId, name, { ...options, pageToken }),
      (page) => page.versions,
    );
  }

  /** The record of a version of `name` (the newest, or `version`), not its content. */
  async getArtifactVersion(
    appName: string,
    userId: string,
    sessionId: string | null,
    name: string,
    options: { version?: number | "latest" } & CallOptions = {},
  ): Promise<ArtifactVersion> {
    const path = { ...artifactAt(appName, userId, sessionId, name), version: String(options.version ?? "latest") };
    return ok(
      this.raw.GET(artifactRoute(sessionId, "/artifacts/{name}/versions/{version}"), {
        params: { path },
        ...this.#call(options),
      }),
    );
  }

  /** Deletes every version of `name`; a later save starts again at version 0. Sent once: again,
   * it would be an `ArtifactNotFoundError`. */
  async deleteArtifact(
    appName: string,
    userId: string,
    sessionId: string | null,
    name: string,
    options: CallOptions = {},
  ): Promise<void> {
    await this.raw.DELETE(artifactRoute(sessionId, "/artifacts/{name}"), {
      params: { path: artifactAt(appName, userId, sessionId, name) },
      ...this.#call(options),
    });
  }

  // --- Memories -------------------------------------------------------------------------------
  // A user's (`…Memory`, `…Memories`) and the whole app's, which every user of it recalls
  // (`…AppMemory`, `…AppMemories`). Each change is a new revision; `ifMatch` takes the
  // `revision` read, and a recall finds them by meaning (once the server's model has embedded
  // them: `embeddingsStatus`) and by words.

  /** Remembers a `text`, or ADK's `content`, of the user's, with `metadata`, `topics`, an
   * expiry (`ttl` or `expireTime`) and its `source`; under `id` if given (else the server's).
   * Sent once: again, it would be a second memory, or a `MemoryAlreadyExistsError`. */
  async createMemory(
    appName: string,
    userId: string,
    memory: MemoryCreate,
    options: CallOptions = {},
  ): Promise<Memory> {
    return ok(
      this.raw.POST(USER_MEMORIES, {
        params: { path: { app_name: appName, user_id: userId } },
        body: memory,
        ...this.#call(options),
      }),
    );
  }

  /** One page of the user's memories, newest change first; only those of a `topic`, a
   * `sessionId` or a `kind`, if given. */
  async listMemories(
    appName: string,
    userId: string,
    options: Query<"list_memories"> & CallOptions = {},
  ): Promise<MemoryPage> {
    const query = fields(options);
    return ok(
      this.raw.GET(USER_MEMORIES, {
        params: { path: { app_name: appName, user_id: userId }, query },
        ...this.#call(options),
      }),
    );
  }

  /** Every memory of the user, fetching pages as the iteration reaches them. */
  memories(
    appName: string,
    userId: string,
    options: AllPages<Query<"list_memories">> & CallOptions = {},
  ): AsyncGenerator<Memory, void, undefined> {
    return paginate(
      (pageToken) => this.listMemories(appName, userId, { ...options, pageToken }),
      (page) => page.memories,
    );
  }

  /** The user's memories (and the app's, unless `includeApp` is false) that best answer
   * `query`, best first, each with its `score`: by meaning and by words, fused (`mode`). */
  async recallMemories(
    appName: string,
    userId: string,
    recall: RecallRequest,
    options: CallOptions = {},
  ): Promise<RecallResult> {
    return ok(
      this.raw.POST(`${USER_MEMORIES}:recall`, {
        params: { path: { app_name: appName, user_id: userId } },
        body: recall,
        ...this.#call(options),
      }),
    );
  }

  /** A memory of the user as it is now; its `revision` is what `ifMatch` takes. */
  async getMemory(appName: string, userId: string, memoryId: string, options: CallOptions = {}): Promise<Memory> {
    const path = { app_name: appName, user_id: userId, memory_id: memoryId };
    return ok(this.raw.GET(USER_MEMORY, { params: { path }, ...this.#call(options) }));
  }

  /** Changes the fields given (`text` or `content`, `author`, `metadata`, `topics`, the
   * expiry; null clears `author` and the expiry), as a new revision; the memory now. */
  async updateMemory(
    appName: string,
    userId: string,
    memoryId: string,
    changes: MemoryUpdate,
    options: MemoryWriteOptions = {},
  ): Promise<Memory> {
    const params = {
      path: { app_name: appName, user_id: userId, memory_id: memoryId },
      header: revisionMatch(options.ifMatch),
    };
    return ok(this.raw.PATCH(USER_MEMORY, { params, body: changes, ...this.#call(options) }));
  }

  /** Forgets a memory, its revisions and its vectors. Sent once: again, it would be a
   * `MemoryNotFoundError`. */
  async deleteMemory(
    appName: string,
    userId: string,
    memoryId: string,
    options: MemoryWriteOptions = {},
  ): Promise<void> {
    const params = {
      path: { app_name: appName, user_id: userId, memory_id: memoryId },
      header: revisionMatch(options.ifMatch),
    };
    await this.raw.DELETE(USER_MEMORY, { params, ...this.#call(options) });
  }

  /** One page of a memory's revisions, newest (the current one) first. */
  async listMemoryRevisions(
    appName: string,
    userId: string,
    memoryId: string,
    options: Query<"list_memory_revisions"> & CallOptions = {},
  ): Promise<MemoryRevisionPage> {
    const query = fields(options);
    const path = { app_name: appName, user_id: userId, memory_id: memoryId };
    return ok(this.raw.GET(`${USER_MEMORY}/revisions`, { params: { path, query }, ...this.#call(options) }));
  }

  /** Every revision of a memory, newest first. */
  memoryRevisions(
    appName: string,
    userId: string,
    memoryId: string,
    options: AllPages<Query<"list_memory_revisions">> & CallOptions = {},
  ): AsyncGenerator<MemoryRevision, void, undefined> {
    return paginate(
      (pageToken) => this.listMemoryRevisions(appName, userId, memoryId, { ...options, pageToken }),
      (page) => page.revisions,
    );
  }

  /** Restores `revision` as a new revision (nothing is lost); the memory now. */
  async rollBackMemory(
    appName: string,
    userId: string,
    memoryId: string,
    revision: number,
    options: MemoryWriteOptions = {},
  ): Promise<Memory> {
    const params = {
      path: { app_name: appName, user_id: userId, memory_id: memoryId },
      header: revisionMatch(options.ifMatch),
    };
    return ok(this.raw.POST(`${USER_MEMORY}:rollback`, { params, body: { revision }, ...this.#call(options) }));
  }

  /** Remembers a fact of the whole app, which every user of it recalls. As `createMemory`. */
  async createAppMemory(appName: string, memory: MemoryCreate, options: CallOptions = {}): Promise<Memory> {
    return ok(
      this.raw.POST(APP_MEMORIES, { params: { path: { app_name: appName } }, body: memory, ...this.#call(options) }),
    );
  }

  /** One page of the app's own memories, newest change first. */
  async listAppMemories(
    appName: string,
    options: Query<"list_app_memories"> & CallOptions = {},
  ): Promise<MemoryPage> {
    const query = fields(options);
    return ok(this.raw.GET(APP_MEMORIES, { params: { path: { app_name: appName }, query }, ...this.#call(options) }));
  }

  /** Every memory of the app's own. */
  appMemories(
    appName: string,
    options: AllPages<Query<"list_app_memories">> & CallOptions = {},
  ): AsyncGenerator<Memory, void, undefined> {
    return paginate(
      (pageToken) => this.listAppMemories(appName, { ...options, pageToken }),
      (page) => page.memories,
    );
  }

  /** The app's own memories that best answer `query`, best first. */
  async recallAppMemories(appName: string, recall: RecallRequest, options: CallOptions = {}): Promise<RecallResult> {
    return ok(
      this.raw.POST(`${APP_MEMORIES}:recall`, {
        params: { path: { app_name: appName } },
        body: recall,
        ...this.#call(options),
      }),
    );
  }

  /** A memory of the app as it is now. */
  async getAppMemory(appName: string, memoryId: string, options: CallOptions = {}): Promise<Memory> {
    const path = { app_name: appName, memory_id: memoryId };
    return ok(this.raw.GET(APP_MEMORY, { params: { path }, ...this.#call(options) }));
  }

  /** Changes a memory of the app, as `updateMemory`. */
  async updateAppMemory(
    appName: string,
    memoryId: string,
    changes: MemoryUpdate,
    options: MemoryWriteOptions = {},
  ): Promise<Memory> {
    const params = { path: { app_name: appName, memory_id: memoryId }, header: revisionMatch(options.ifMatch) };
    return ok(this.raw.PATCH(APP_MEMORY, { params, body: changes, ...this.#call(options) }));
  }

  /** Forgets a memory of the app, as `deleteMemory`. */
  async deleteAppMemory(appName: string, memoryId: string, options: MemoryWriteOptions = {}): Promise<void> {
    const params = { path: { app_name: appName, memory_id: memoryId }, header: revisionMatch(options.ifMatch) };
    await this.raw.DELETE(APP_MEMORY, { params, ...this.#call(options) });
  }

  /** One page of the revisions of a memory of the app, newest first. */
  async listAppMemoryRevisions(
    appName: string,
    memoryId: string,
    options: Query<"list_app_memory_revisions"> & CallOptions = {},
  ): Promise<MemoryRevisionPage> {
    const query = fields(options);
    const path = { app_name: appName, memory_id: memoryId };
    return ok(this.raw.GET(`${APP_MEMORY}/revisions`, { params: { path, query }, ...this.#call(options) }));
  }

  /** Every revision of a memory of the app, newest first. */
  appMemoryRevisions(
    appName: string,
    memoryId: string,
    options: AllPages<Query<"list_app_memory_revisions">> & CallOptions = {},
  ): AsyncGenerator<MemoryRevision, void, undefined> {
    return paginate(
      (pageToken) => this.listAppMemoryRevisions(appName, memoryId, { ...options, pageToken }),
      (page) => page.revisions,
    );
  }

  /** Restores `revision` of a memory of the app, as `rollBackMemory`. */
  async rollBackAppMemory(
    appName: string,
    memoryId: string,
    revision: number,
    options: MemoryWriteOptions = {},
  ): Promise<Memory> {
    const params = { path: { app_name: appName, memory_id: memoryId }, header: revisionMatch(options.ifMatch) };
    return ok(this.raw.POST(`${APP_MEMORY}:rollback`, { params, body: { revision }, ...this.#call(options) }));
  }

  /** Adds the session's events to its user's memory (ADK's `add_session_to_memory`): those of
   * `eventIds`, or else each with text that the server takes (by default, what the user said).
   * Each is a memory of kind `event` that keeps no copy of the event's text and is forgotten
   * with the session; again later, only what is new is added (so it is resent as a read is).
   * How many were added now. */
  async rememberSession(
    appName: string,
    userId: string,
    sessionId: string,
    options: { eventIds?: string[] } & CallOptions = {},
  ): Promise<Remembered> {
    const body = fields(options);
    return ok(
      this.raw.POST(`${SESSION}:remember`, {
        params: { path: at(appName, userId, sessionId) },
        body,
        ...this.#call(options),
      }),
    );
  }

  /** How the server recalls now (by meaning and words, or by words alone, and why), its model,
   * and how many memories wait to be embedded (`pending`: 0 once all are recalled by meaning). */
  async embeddingsStatus(options: CallOptions = {}): Promise<EmbeddingsStatus> {
    return ok(this.raw.GET("/embeddings", { ...this.#call(options) }));
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

  // --- Erasing a user, or an app -------------------------------------------------------------

  /** Erases everything of the user of the app: their sessions with all they hold, their state,
   * memories, artifacts and API keys. From the start their writes are refused
   * (`UserErasingError`). The erasure, `done` with what it removed by kind, or still `running`
   * if it did not finish within the server's SESSIONARY_ERASE_WAIT (a 202): `getErasure` shows
   * its progress. Again, it erases what was written since. */
  async eraseUser(appName: string, userId: string, options: CallOptions = {}): Promise<Erasure> {
    const params = { path: { app_name: appName, user_id: userId } };
    return ok(this.raw.DELETE(USER, { params, ...this.#call(options) }));
  }

  /** The user's latest erasure, `running` with its progress or `done`; `ErasureNotFoundError`
   * if the user was never erased. */
  async getErasure(appName: string, userId: string, options: CallOptions = {}): Promise<Erasure> {
    const params = { path: { app_name: appName, user_id: userId } };
    return ok(this.raw.GET(`${USER}/erasure`, { params, ...this.#call(options) }));
  }

  /** Erases everything of the app (an admin key only): every user's sessions, state, memories,
   * artifacts and keys, and the app's own state, memories and keys. From the start writes that
   * make something of the app are refused (`AppErasingError`). The erasure, `done` with what it
   * removed by kind, or still `running` (a 202): `getAppErasure` shows its progress. */
  async eraseApp(appName: string, options: CallOptions = {}): Promise<AppErasure> {
    const params = { path: { app_name: appName } };
    return ok(this.raw.DELETE("/apps/{app_name}", { params, ...this.#call(options) }));
  }

  /** The app's latest erasure (an admin key only), `running` with its progress or `done`;
   * `ErasureNotFoundError` if the app was never erased. */
  async getAppErasure(appName: string, options: CallOptions = {}): Promise<AppErasure> {
    const params = { path: { app_name: appName } };
    return ok(this.raw.GET("/apps/{app_name}/erasure", { params, ...this.#call(options) }));
  }

  // --- Operations -----------------------------------------------------------------------------

  /** One page of the audit log, newest first (an admin key only): session deletes, imports,
   * keys made and revoked, retention sweeps; those of an `app`, of a user of it (`userId` needs
   * `app`), of an `action` (`session.delete`), with `time` ≥ `afterTimestamp` and <
   * `beforeTimestamp`. */
  async listAuditRecords(options: Query<"list_audit_records"> & CallOptions = {}): Promise<AuditPage> {
    const query = fields(options);
    return ok(this.raw.GET("/audit", { params: { query }, ...this.#call(options) }));
  }

  /** Every audit record (with the filters of `listAuditRecords`), newest first. */
  auditRecords(
    options: AllPages<Query<"list_audit_records">> & CallOptions = {},
  ): AsyncGenerator<AuditRecord, void, undefined> {
    return paginate(
      (pageToken) => this.listAuditRecords({ ...options, pageToken }),
      (page) => page.records,
    );
  }

  /** What the client's API key may reach (`/auth/key`): its app and user, whether it may write. */
  async keyScope(options: CallOptions = {}): Promise<KeyScope> {
    return ok(this.raw.GET("/auth/key", { ...this.#call(options) }));
  }

  /** The process answers (`/healthz`); says nothing of the database. */
  async health(options: CallOptions = {}): Promise<Health> {
    return ok(this.raw.GET("/healthz", { ...this.#call(options) }));
  }

  /** The database answers, at the expected schema (`/readyz`); else `ServiceUnavailableError`. */
  async readiness(options: CallOptions = {}): Promise<Readiness> {
    return ok(this.raw.GET("/readyz", { ...this.#call(options) }));
  }

  /** The Prometheus metrics of the worker that answered (`/metrics`), as text. */
  async metrics(options: CallOptions = {}): Promise<string> {
    return ok(this.raw.GET("/metrics", { parseAs: "text", ...this.#call(options) }));
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
  countEvents: "countEvents",
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
  listArtifacts: "listArtifacts",
  artifacts: "artifacts",
  saveArtifact: "saveArtifact",
  uploadArtifact: "uploadArtifact",
  downloadArtifact: "downloadArtifact",
  openArtifact: "openArtifact",
  listArtifactVersions: "listArtifactVersions",
  artifactVersions: "artifactVersions",
  getArtifactVersion: "getArtifactVersion",
  deleteArtifact: "deleteArtifact",
  remember: "rememberSession",
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
 * `getSession`, `chat.update()` `updateSession`, `chat.delete()` `deleteSession`,
 * `chat.remember()` `rememberSession`.
 */
export type SessionHandle = {
  readonly client: Sessionary;
  readonly appName: string;
  readonly userId: string;
  readonly sessionId: string;
} & { readonly [Name in keyof typeof BOUND]: Bound<Sessionary[(typeof BOUND)[Name]]> };
