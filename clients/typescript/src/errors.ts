/**
 * The errors this package throws, as the Python client raises them:
 *
 *     SessionaryError                          anything thrown on purpose
 *     ├── APIConnectionError                   no answer: refused, reset, DNS (after the retries)
 *     │   └── APITimeoutError                  no answer within `timeout`
 *     └── APIError                             the server answered with an error status
 *         ├── BadRequestError                  400 bad_request
 *         │   ├── CORSPreflightRefusedError    400 cors_preflight_refused
 *         │   └── HostNotAllowedError          400 host_not_allowed
 *         ├── UnauthorizedError                401 unauthorized
 *         ├── ForbiddenError                   403 forbidden
 *         │   └── CrossOriginRefusedError      403 cross_origin_refused
 *         ├── NotFoundError                    404 not_found
 *         │   ├── SessionNotFoundError         404 session_not_found
 *         │   ├── EventNotFoundError           404 event_not_found
 *         │   ├── ArtifactNotFoundError        404 artifact_not_found
 *         │   ├── MemoryNotFoundError          404 memory_not_found
 *         │   └── ErasureNotFoundError         404 erasure_not_found
 *         ├── MethodNotAllowedError            405 method_not_allowed
 *         ├── ConflictError                    409 conflict
 *         │   ├── SessionAlreadyExistsError    409 session_already_exists
 *         │   ├── SessionClosedError           409 session_closed
 *         │   ├── EventConflictError           409 event_conflict
 *         │   ├── ToolPairViolationError       409 tool_pair_violation
 *         │   ├── ToolCallsPendingError        409 tool_calls_pending (`callIds`)
 *         │   ├── VersionExhaustedError        409 version_exhausted
 *         │   ├── MemoryAlreadyExistsError     409 memory_already_exists
 *         │   ├── UserErasingError             409 user_erasing
 *         │   └── AppErasingError              409 app_erasing
 *         ├── PreconditionFailedError          412: If-Match named another version
 *         │   ├── StaleSessionError            412 stale_session (`currentVersion`)
 *         │   └── StaleMemoryError             412 stale_memory (`currentRevision`)
 *         ├── PayloadTooLargeError             413 payload_too_large
 *         ├── UnsupportedMediaTypeError        415 unsupported_media_type
 *         ├── RangeNotSatisfiableError         416 range_not_satisfiable (`size`)
 *         ├── InvalidRequestError              422 validation_error (`errors`)
 *         ├── HeadersTooLargeError             431 headers_too_large
 *         ├── InternalError                    500 internal_error
 *         ├── ServiceUnavailableError          503
 *         │   ├── DatabaseUnavailableError     503 database_unavailable
 *         │   ├── SchemaBehindError            503 schema_behind
 *         │   ├── SearchBusyError              503 search_busy
 *         │   ├── SearchTimeoutError           503 search_timeout
 *         │   └── TooManyStreamsError          503 too_many_streams
 *         └── HTTPError                        http_error, of any other status
 *
 * Which class each code throws is the generated table `ERROR_CLASSES` (spec.gen.ts, from
 * clients/generate.py); a code's class is a child of its status's, so a check for the status
 * catches it too.
 *
 * An abort the caller asked for (its `AbortSignal`) is not one of them: it rejects with the
 * signal's reason, as fetch does.
 */
// This module itself, to find each class by the name the generated table gives it.
import * as errors from "./errors.js";
import type { components } from "./schema.js";
import { ERROR_CLASSES } from "./spec.gen.js";

export type Problem = components["schemas"]["Problem"];
export type ProblemCode = Problem["code"];

/** Base of every error this package throws on purpose. */
export class SessionaryError extends Error {
  override name = this.constructor.name;
}

/** The request got no answer, after the retries it was allowed: the server is down or
 * unreachable, or the connection broke. `cause` is fetch's own error; `requestId` the
 * `X-Request-ID` the request was sent with, if the caller gave one. */
export class APIConnectionError extends SessionaryError {
  readonly requestId: string | undefined;

  constructor(message: string, options: ErrorOptions & { requestId?: string | undefined } = {}) {
    super(message, { cause: options.cause });
    this.requestId = options.requestId;
  }
}

/** No answer came within the client's `timeout`. */
export class APITimeoutError extends APIConnectionError {}

/** An error answer: `problem` is its RFC 9457 body (made up when the body was not one);
 * `requestId` the id the server logged the request under (its `X-Request-ID`: the caller's,
 * when it sent one). A request refused before it was sent has none. */
export class APIError extends SessionaryError {
  readonly status: number;
  readonly code: string;
  readonly detail: string;
  readonly headers: Headers;
  readonly requestId: string | undefined;

  constructor(
    readonly problem: Problem,
    readonly response: Response,
  ) {
    super(`${response.status} ${problem.code}: ${problem.detail}`);
    this.status = response.status;
    this.code = problem.code;
    this.detail = problem.detail;
    this.headers = response.headers;
    this.requestId = response.headers.get("X-Request-ID") ?? undefined;
  }
}

/** The request is not valid HTTP, or not what the service reads. */
export class BadRequestError extends APIError {}
/** A browser asked to send a cross-origin request that SESSIONARY_CORS_ORIGINS does not allow. */
export class CORSPreflightRefusedError extends BadRequestError {}
/** The server does not answer for this Host (SESSIONARY_ALLOWED_HOSTS). */
export class HostNotAllowedError extends BadRequestError {}
/** No API key was sent, or it is unknown or revoked (`apiKey`, or SESSIONARY_API_KEY). */
export class UnauthorizedError extends APIError {}
/** The key is valid, but this app, user or write is outside its scope. */
export class ForbiddenError extends APIError {}
/** A page on an origin SESSIONARY_CORS_ORIGINS does not allow may not write. */
export class CrossOriginRefusedError extends ForbiddenError {}
export class NotFoundError extends APIError {}
export class SessionNotFoundError extends NotFoundError {}
/** The session holds no event with that id. */
export class EventNotFoundError extends NotFoundError {}
/** No artifact of that name, or no such version of it (a version ADK's rewind marked removed
 * downloads so too). */
export class ArtifactNotFoundError extends NotFoundError {}
/** No memory of that id here (of this user, or of the app), or it has expired. */
export class MemoryNotFoundError extends NotFoundError {}
/** The user (or the app) was never erased: no erasure of theirs to show. */
export class ErasureNotFoundError extends NotFoundError {}
export class MethodNotAllowedError extends APIError {}
export class ConflictError extends APIError {}
export class SessionAlreadyExistsError extends ConflictError {}
/** The session is closed: it can be read, forked or deleted, not written. */
export class SessionClosedError extends ConflictError {}
/** The event id is stored already with other content: a new event needs a new id. */
export class EventConflictError extends ConflictError {}
/** The change would leave a function call without its response, or a response without it. */
export class ToolPairViolationError extends ConflictError {}
/** The write would take the session's version past 2^53 - 1; go on in a new session. */
export class VersionExhaustedError extends ConflictError {}
/** A memory of that id exists already: update it, or create one with another id. */
export class MemoryAlreadyExistsError extends ConflictError {}
/** The user is being erased: their writes are refused until the erase is done. */
export class UserErasingError extends ConflictError {}
/** The app is being erased: writes that make something of it are refused until the erase is
 * done. */
export class AppErasingError extends ConflictError {}
/** Queued events were not promoted: function calls are unanswered. Answer or heal them, or
 * promote with `force`. */
export class ToolCallsPendingError extends ConflictError {
  /** The function calls still unanswered. */
  get callIds(): string[] {
    return this.problem.callIds ?? [];
  }
}
/** If-Match named another version of what the request would change; nothing was written. */
export class PreconditionFailedError extends APIError {}
/** If-Match named another version; nothing was written. Reload, then retry. */
export class StaleSessionError extends PreconditionFailedError {
  /** The session's version now. */
  get currentVersion(): number | undefined {
    return this.problem.currentVersion ?? undefined;
  }
}
/** `ifMatch` named another revision of the memory; nothing was changed. Read it again, then
 * retry. */
export class StaleMemoryError extends PreconditionFailedError {
  /** The memory's revision now. */
  get currentRevision(): number | undefined {
    // Sent by the server, though the spec's Problem does not name it yet.
    return (this.problem as Problem & { currentRevision?: number | null }).currentRevision ?? undefined;
  }
}
export class PayloadTooLargeError extends APIError {}
/** The body is not JSON. */
export class UnsupportedMediaTypeError extends APIError {}
/** The download's `range` selects no byte of the content. */
export class RangeNotSatisfiableError extends APIError {
  /** The content's length in bytes, as the answer's `Content-Range` gives it. */
  get size(): number | undefined {
    const size = /^bytes \*\/(\d+)$/.exec(this.headers.get("Content-Range") ?? "")?.[1];
    return size === undefined ? undefined : Number(size);
  }
}
export class InvalidRequestError extends APIError {
  get errors(): NonNullable<Problem["errors"]> {
    return this.problem.errors ?? [];
  }
}
export class HeadersTooLargeError extends APIError {}
/** A fault of the server's; its logs have it under the `requestId`. */
export class InternalError extends APIError {}
/** Retry later: the database is unreachable, or the server is at a limit (`Retry-After`). */
export class ServiceUnavailableError extends APIError {}
export class DatabaseUnavailableError extends ServiceUnavailableError {}
/** The database's schema is not the server's: run `sessionary migrate`. */
export class SchemaBehindError extends ServiceUnavailableError {}
export class SearchBusyError extends ServiceUnavailableError {}
/** The search ran past the server's time limit: narrow it rather than retry it. */
export class SearchTimeoutError extends ServiceUnavailableError {}
export class TooManyStreamsError extends ServiceUnavailableError {}
/** Refused by HTTP itself with a status no other code names, or answered by a proxy. */
export class HTTPError extends APIError {}

type ErrorClass = new (problem: Problem, response: Response) => APIError;

// Each code's class, by the name the generated table gives it. One not written yet is left
// out: its status's class stands in, as for a newer server's code, and test/spec.test.ts
// names it.
const BY_CODE = new Map<string, ErrorClass>();
for (const [code, name] of Object.entries(ERROR_CLASSES)) {
  const kind: unknown = (errors as Record<string, unknown>)[name];
  if (typeof kind === "function" && kind.prototype instanceof APIError) {
    BY_CODE.set(code, kind as ErrorClass);
  }
}
// For codes this client does not know yet, and for answers that are not problems (a proxy's).
const BY_STATUS: Record<number, ErrorClass> = {
  400: BadRequestError,
  401: UnauthorizedError,
  403: ForbiddenError,
  404: NotFoundError,
  409: ConflictError,
  412: PreconditionFailedError,
  413: PayloadTooLargeError,
  416: RangeNotSatisfiableError,
  422: InvalidRequestError,
  503: ServiceUnavailableError,
};

/** The problem an error answer carries, or one made up from its status and text. */
export async function problemOf(response: Response): Promise<Problem> {
  const text = await response.text();
  try {
    const problem = JSON.parse(text) as Problem;
    if (typeof problem?.code === "string") return problem;
  } catch {
    // Not JSON: a proxy's page, say.
  }
  return {
    type: "about:blank",
    title: response.statusText,
    status: response.status,
    code: "http_error",
    detail: text.slice(0, 500),
  };
}

/** The typed error of an error answer. */
export async function errorFor(response: Response): Promise<APIError> {
  const problem = await problemOf(response);
  let kind = BY_CODE.get(problem.code);
  if (kind === undefined || kind === HTTPError) {
    // `http_error` names no cause: the status's class, where there is one, says more.
    kind = BY_STATUS[response.status] ?? kind ?? APIError;
  }
  return new kind(problem, response);
}
