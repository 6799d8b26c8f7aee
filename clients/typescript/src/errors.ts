/**
 * The errors this package throws, as the Python client raises them:
 *
 *     SessionaryError                          anything thrown on purpose
 *     ├── APIConnectionError                   no answer: refused, reset, DNS (after the retries)
 *     │   └── APITimeoutError                  no answer within `timeout`
 *     └── APIError                             the server answered with an error status
 *         ├── UnauthorizedError                401
 *         ├── ForbiddenError                   403
 *         ├── NotFoundError                    404
 *         │   └── SessionNotFoundError         404 session_not_found
 *         ├── ConflictError                    409
 *         │   ├── SessionAlreadyExistsError    409 session_already_exists
 *         │   ├── SessionClosedError           409 session_closed
 *         │   ├── EventConflictError           409 event_conflict
 *         │   ├── ToolPairViolationError       409 tool_pair_violation
 *         │   └── ToolCallsPendingError        409 tool_calls_pending (`callIds`)
 *         ├── StaleSessionError                412 stale_session (`currentVersion`)
 *         ├── PayloadTooLargeError             413
 *         ├── InvalidRequestError              422 validation_error (`errors`)
 *         └── ServiceUnavailableError          503
 *
 * An abort the caller asked for (its `AbortSignal`) is not one of them: it rejects with the
 * signal's reason, as fetch does.
 */
import type { components } from "./schema.js";

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

/** No API key was sent, or it is unknown or revoked (`apiKey`, or SESSIONARY_API_KEY). */
export class UnauthorizedError extends APIError {}
/** The key is valid, but this app, user or write is outside its scope. */
export class ForbiddenError extends APIError {}
export class NotFoundError extends APIError {}
export class SessionNotFoundError extends NotFoundError {}
export class ConflictError extends APIError {}
export class SessionAlreadyExistsError extends ConflictError {}
/** The session is closed: it can be read, forked or deleted, not written. */
export class SessionClosedError extends ConflictError {}
/** The event id is stored already with other content: a new event needs a new id. */
export class EventConflictError extends ConflictError {}
/** The change would leave a function call without its response, or a response without it. */
export class ToolPairViolationError extends ConflictError {}
/** Queued events were not promoted: function calls are unanswered. Answer or heal them, or
 * promote with `force`. */
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
/** Retry later: the database is unreachable, or the server is at a limit (`Retry-After`). */
export class ServiceUnavailableError extends APIError {}

type ErrorClass = new (problem: Problem, response: Response) => APIError;

const BY_CODE: Partial<Record<ProblemCode, ErrorClass>> = {
  session_not_found: SessionNotFoundError,
  session_already_exists: SessionAlreadyExistsError,
  session_closed: SessionClosedError,
  event_conflict: EventConflictError,
  tool_pair_violation: ToolPairViolationError,
  tool_calls_pending: ToolCallsPendingError,
  stale_session: StaleSessionError,
  payload_too_large: PayloadTooLargeError,
  validation_error: InvalidRequestError,
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
  const kind = BY_CODE[problem.code] ?? BY_STATUS[response.status] ?? APIError;
  return new kind(problem, response);
}
