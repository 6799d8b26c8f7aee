# frozen_string_literal: true

require "json"
require_relative "spec"

module Sessionary
  # The errors this gem raises, as the Python and TypeScript clients raise them:
  #
  #     Sessionary::Error                        anything raised on purpose
  #     ├── APIConnectionError                   no answer: refused, reset, DNS (after the retries)
  #     │   └── APITimeoutError                  no answer within the timeout
  #     └── APIError                             the server answered with an error status
  #         ├── BadRequestError                  400 bad_request
  #         │   ├── CORSPreflightRefusedError    400 cors_preflight_refused
  #         │   └── HostNotAllowedError          400 host_not_allowed
  #         ├── UnauthorizedError                401 unauthorized
  #         ├── ForbiddenError                   403 forbidden
  #         │   └── CrossOriginRefusedError      403 cross_origin_refused
  #         ├── NotFoundError                    404 not_found
  #         │   ├── SessionNotFoundError         404 session_not_found
  #         │   ├── EventNotFoundError           404 event_not_found
  #         │   ├── ArtifactNotFoundError        404 artifact_not_found
  #         │   ├── MemoryNotFoundError          404 memory_not_found
  #         │   └── ErasureNotFoundError         404 erasure_not_found
  #         ├── MethodNotAllowedError            405 method_not_allowed
  #         ├── ConflictError                    409 conflict
  #         │   ├── SessionAlreadyExistsError    409 session_already_exists
  #         │   ├── SessionClosedError           409 session_closed
  #         │   ├── EventConflictError           409 event_conflict
  #         │   ├── ToolPairViolationError       409 tool_pair_violation
  #         │   ├── ToolCallsPendingError        409 tool_calls_pending (#call_ids)
  #         │   ├── VersionExhaustedError        409 version_exhausted
  #         │   ├── MemoryAlreadyExistsError     409 memory_already_exists
  #         │   ├── UserErasingError             409 user_erasing
  #         │   └── AppErasingError              409 app_erasing
  #         ├── PreconditionFailedError          412: If-Match named another version
  #         │   ├── StaleSessionError            412 stale_session (#current_version)
  #         │   └── StaleMemoryError             412 stale_memory (#current_revision)
  #         ├── PayloadTooLargeError             413 payload_too_large
  #         ├── UnsupportedMediaTypeError        415 unsupported_media_type
  #         ├── RangeNotSatisfiableError         416 range_not_satisfiable (#size)
  #         ├── InvalidRequestError              422 validation_error (#errors)
  #         ├── HeadersTooLargeError             431 headers_too_large
  #         ├── InternalError                    500 internal_error
  #         ├── ServiceUnavailableError          503
  #         │   ├── DatabaseUnavailableError     503 database_unavailable
  #         │   ├── SchemaBehindError            503 schema_behind
  #         │   ├── SearchBusyError              503 search_busy
  #         │   ├── SearchTimeoutError           503 search_timeout
  #         │   └── TooManyStreamsError          503 too_many_streams
  #         └── HTTPError                        http_error, of any other status
  #
  # Which class each code raises is the generated table Spec::ERROR_CLASSES (spec.rb, from
  # clients/generate.py); a code's class is a child of its status's, so a rescue of the status
  # catches it too.
  # A connection error keeps Net::HTTP's as its #cause.
  class Error < StandardError; end

  # The request got no answer, after the resends it was allowed: the server is down or
  # unreachable, or the connection broke. #request_id is the X-Request-ID it was sent with, if
  # the caller gave one.
  class APIConnectionError < Error
    attr_reader :request_id

    def initialize(message = nil, request_id: nil)
      @request_id = request_id
      super(message)
    end
  end

  # No answer came within the client's timeout.
  class APITimeoutError < APIConnectionError; end

  # An error answer: #problem is its RFC 9457 body (made up when the body was not one),
  # #headers the answer's (their names in lower case), #request_id the id the server logged the
  # request under (its X-Request-ID: the caller's, when it sent one). A request refused before
  # it was sent has none.
  class APIError < Error
    attr_reader :status, :code, :detail, :problem, :headers, :request_id

    def initialize(status, problem, headers = {})
      @status = status
      @problem = problem
      @code = problem.fetch("code", "http_error").to_s
      @detail = problem.fetch("detail", "").to_s
      @headers = headers
      @request_id = headers["x-request-id"]
      super("#{status} #{code}: #{detail}")
    end
  end

  # The request is not valid HTTP, or not what the service reads.
  class BadRequestError < APIError; end
  # A browser asked to send a cross-origin request that SESSIONARY_CORS_ORIGINS does not allow.
  class CORSPreflightRefusedError < BadRequestError; end
  # The server does not answer for this Host (SESSIONARY_ALLOWED_HOSTS).
  class HostNotAllowedError < BadRequestError; end
  # No API key was sent, or it is unknown or revoked (api_key:, or SESSIONARY_API_KEY).
  class UnauthorizedError < APIError; end
  # The key is valid, but this app, user or write is outside its scope.
  class ForbiddenError < APIError; end
  # A page on an origin SESSIONARY_CORS_ORIGINS does not allow may not write.
  class CrossOriginRefusedError < ForbiddenError; end
  class NotFoundError < APIError; end
  class SessionNotFoundError < NotFoundError; end
  # The session holds no event with that id.
  class EventNotFoundError < NotFoundError; end
  # No artifact of that name, or no such version of it (a version ADK's rewind marked removed
  # downloads so too).
  class ArtifactNotFoundError < NotFoundError; end
  # No memory of that id here (of this user, or of the app), or it has expired.
  class MemoryNotFoundError < NotFoundError; end
  # The user of the app (or the app) was never erased (Client#get_erasure, #get_app_erasure).
  class ErasureNotFoundError < NotFoundError; end
  class MethodNotAllowedError < APIError; end
  class ConflictError < APIError; end
  class SessionAlreadyExistsError < ConflictError; end
  # The session is closed: it can be read, forked or deleted, not written.
  class SessionClosedError < ConflictError; end
  # The event id is stored already with other content: a new event needs a new id.
  class EventConflictError < ConflictError; end
  # The change would leave a function call without its response, or a response without it.
  class ToolPairViolationError < ConflictError; end
  # The write would take the session's version past 2^53 - 1; go on in a new session.
  class VersionExhaustedError < ConflictError; end
  # A memory of that id exists already: update it, or create one with another id.
  class MemoryAlreadyExistsError < ConflictError; end
  # The user is being erased: nothing of theirs is written until the erase is done
  # (Client#get_erasure reads its status).
  class UserErasingError < ConflictError; end
  # The app is being erased: nothing of it is made until the erase is done
  # (Client#get_app_erasure reads its status).
  class AppErasingError < ConflictError; end

  # Queued events were not promoted: function calls are unanswered. Answer or heal them, or
  # promote with force: true.
  class ToolCallsPendingError < ConflictError
    def call_ids = Array(problem["callIds"])
  end

  # If-Match named another version of what the request would change; nothing was written.
  class PreconditionFailedError < APIError; end

  # If-Match named another version; nothing was written. Reload, then retry.
  class StaleSessionError < PreconditionFailedError
    def current_version = problem["currentVersion"]
  end

  # if_match: named another revision of the memory; nothing was changed. Read it again, then
  # retry.
  class StaleMemoryError < PreconditionFailedError
    def current_revision = problem["currentRevision"]
  end

  class PayloadTooLargeError < APIError; end
  # The body is not JSON.
  class UnsupportedMediaTypeError < APIError; end

  # The download's `range:` selects no byte of the content.
  class RangeNotSatisfiableError < APIError
    # The content's length in bytes, as the answer's Content-Range gives it.
    def size = headers["content-range"].to_s[%r{\Abytes \*/(\d+)\z}, 1]&.to_i
  end

  class InvalidRequestError < APIError
    def errors = Array(problem["errors"])
  end

  class HeadersTooLargeError < APIError; end
  # A fault of the server's; its logs have it under the #request_id.
  class InternalError < APIError; end
  # Retry later: the database is unreachable, or the server is at a limit (Retry-After).
  class ServiceUnavailableError < APIError; end
  class DatabaseUnavailableError < ServiceUnavailableError; end
  # The database's schema is not the server's: run `sessionary migrate`.
  class SchemaBehindError < ServiceUnavailableError; end
  class SearchBusyError < ServiceUnavailableError; end
  # The search ran past the server's time limit: narrow it rather than retry it.
  class SearchTimeoutError < ServiceUnavailableError; end
  class TooManyStreamsError < ServiceUnavailableError; end
  # Refused by HTTP itself with a status no other code names, or answered by a proxy.
  class HTTPError < APIError; end

  # Each code's class, by the name the generated table gives it. One not written yet is left
  # out: its status's class stands in, as for a newer server's code, and test/spec_test.rb
  # names it.
  BY_CODE = Spec::ERROR_CLASSES.filter_map do |code, name|
    [code, const_get(name)] if const_defined?(name, false)
  end.to_h.freeze
  # For codes this client does not know yet, and for answers that are not problems (a proxy's).
  BY_STATUS = {
    400 => BadRequestError,
    401 => UnauthorizedError,
    403 => ForbiddenError,
    404 => NotFoundError,
    409 => ConflictError,
    412 => PreconditionFailedError,
    413 => PayloadTooLargeError,
    416 => RangeNotSatisfiableError,
    422 => InvalidRequestError,
    503 => ServiceUnavailableError
  }.freeze

  # The error of a request this client does not send, since the server would refuse it: a 422
  # as the server's, `loc` naming what is wrong ("path", "session_id").
  def self.refused(why, *loc)
    InvalidRequestError.new(422, {
      "type" => "urn:sessionary:problem:validation_error", "title" => "Invalid input", "status" => 422,
      "detail" => "#{loc.join('.')}: #{why} (not sent)", "code" => "validation_error",
      "errors" => [{"loc" => loc, "msg" => why, "type" => "value_error"}]
    })
  end

  # Whether every string in a JSON value, its keys too, is valid UTF-8 as it will be sent: a
  # string in another encoding is converted, a binary one is sent as its bytes.
  def self.utf8?(value)
    case value
    when String
      value = value.dup.force_encoding(Encoding::UTF_8) if value.encoding == Encoding::BINARY
      value.valid_encoding?
    when Symbol then utf8?(value.to_s)
    when Hash then value.all? { |key, item| utf8?(key) && utf8?(item) }
    when Array then value.all? { |item| utf8?(item) }
    else true
    end
  end

  # The typed error of an error answer (a Net::HTTPResponse).
  def self.error_for(response)
    status = response.code.to_i
    problem = problem_of(response.body.to_s, status)
    kind = BY_CODE[problem["code"]]
    # http_error names no cause: the status's class, where there is one, says more.
    kind = BY_STATUS.fetch(status, kind || APIError) if kind.nil? || kind == HTTPError
    kind.new(status, problem, response.each_header.to_h)
  end

  # The problem an error body carries, or one made up from its status and text.
  def self.problem_of(body, status)
    parsed = begin
      JSON.parse(body)
    rescue JSON::ParserError
      nil
    end
    return parsed if parsed.is_a?(Hash) && parsed["code"].is_a?(String)

    {"status" => status, "code" => "http_error", "detail" => body[0, 500]}
  end
  private_class_method :problem_of
end
