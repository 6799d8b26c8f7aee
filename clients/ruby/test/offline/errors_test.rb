# frozen_string_literal: true

require "test_helper"

# Error answers, as the API sends them, raised as the class their `code` names (else their
# status's), with what they carry.
class ErrorAnswersTest < Minitest::Test
  include Stubbed

  SESSION = "/apps/app/users/ada/sessions/s1"

  def test_the_tree_of_errors
    assert_operator Sessionary::SessionNotFoundError, :<, Sessionary::NotFoundError
    assert_operator Sessionary::ToolCallsPendingError, :<, Sessionary::ConflictError
    assert_operator Sessionary::MemoryNotFoundError, :<, Sessionary::NotFoundError
    assert_operator Sessionary::MemoryAlreadyExistsError, :<, Sessionary::ConflictError
    assert_operator Sessionary::ErasureNotFoundError, :<, Sessionary::NotFoundError
    assert_operator Sessionary::UserErasingError, :<, Sessionary::ConflictError
    assert_operator Sessionary::AppErasingError, :<, Sessionary::ConflictError
    assert_operator Sessionary::StaleSessionError, :<, Sessionary::PreconditionFailedError
    assert_operator Sessionary::StaleMemoryError, :<, Sessionary::PreconditionFailedError
    assert_operator Sessionary::APITimeoutError, :<, Sessionary::APIConnectionError
    assert_operator Sessionary::APIError, :<, Sessionary::Error
    assert_operator Sessionary::Error, :<, StandardError
  end

  def test_an_error_carries_its_status_code_detail_problem_headers_and_request_id
    problem = StubAPI.problem(404, "session_not_found", "Session 's1' of user 'ada' in app 'app' does not exist.")
    api.on("GET", SESSION, 404, problem, {"X-Request-ID" => "req-1"})
    error = assert_raises(Sessionary::SessionNotFoundError) { sessionary.get_session("app", "ada", "s1") }
    assert_equal [404, "session_not_found", problem["detail"], problem], [error.status, error.code, error.detail, error.problem]
    assert_equal ["req-1", "application/problem+json"], [error.request_id, error.headers["content-type"]]
    assert_equal "404 session_not_found: #{problem['detail']}", error.message
  end

  def test_the_request_id_sent_is_the_errors
    api.on("GET", SESSION, 404, StubAPI.problem(404, "session_not_found"))
    error = assert_raises(Sessionary::SessionNotFoundError) do
      sessionary.get_session("app", "ada", "s1", request_options: {headers: {"X-Request-ID" => "mine-1"}})
    end
    assert_equal "mine-1", error.request_id
  end

  def test_what_each_error_carries_is_read
    api.on("POST", "#{SESSION}/events", 412, StubAPI.problem(412, "stale_session", currentVersion: 3))
    api.on("POST", "#{SESSION}/pending:promote", 409, StubAPI.problem(409, "tool_calls_pending", callIds: ["call-1"]))
    errors = [{"loc" => %w[body ttl], "msg" => "Input should be greater than or equal to 1", "type" => "greater_than_equal"}]
    api.on("PATCH", SESSION, 422, StubAPI.problem(422, "validation_error", errors: errors))
    stale = assert_raises(Sessionary::StaleSessionError) { sessionary.append_event("app", "ada", "s1", {}, if_match: 2) }
    assert_equal 3, stale.current_version
    pending = assert_raises(Sessionary::ToolCallsPendingError) { sessionary.promote_pending("app", "ada", "s1") }
    assert_equal ["call-1"], pending.call_ids
    invalid = assert_raises(Sessionary::InvalidRequestError) { sessionary.update_session("app", "ada", "s1", ttl: 0) }
    assert_equal errors, invalid.errors
    api.on("PATCH", "/apps/app/memories/m1", 412, StubAPI.problem(412, "stale_memory", currentRevision: 4))
    stale = assert_raises(Sessionary::StaleMemoryError) { sessionary.update_app_memory("app", "m1", text: "x", if_match: 3) }
    assert_equal [412, 4], [stale.status, stale.current_revision]
  end

  def test_a_412_of_a_code_this_client_does_not_know_is_a_precondition_failed_error
    api.on("DELETE", "/apps/app/memories/m1", 412, JSON.generate(StubAPI.problem(412, "some_new_precondition")),
           {"Content-Type" => "application/problem+json"})
    error = assert_raises(Sessionary::PreconditionFailedError) { sessionary.delete_app_memory("app", "m1", if_match: 1) }
    assert_equal "some_new_precondition", error.code
  end

  def test_a_code_this_client_does_not_know_is_raised_by_its_status
    # A newer server's code, which the spec does not list yet: sent as text, past the stub's check.
    api.on("POST", "#{SESSION}:close", 409, JSON.generate(StubAPI.problem(409, "some_new_conflict")),
           {"Content-Type" => "application/problem+json"})
    error = assert_raises(Sessionary::ConflictError) { sessionary.close_session("app", "ada", "s1", "completed") }
    assert_equal "some_new_conflict", error.code
  end

  def test_an_answer_that_is_no_problem_is_raised_by_its_status_as_http_error
    page = "<html>Bad gateway</html>"
    api.on("DELETE", SESSION, 404, page, {"Content-Type" => "text/html"})
    error = assert_raises(Sessionary::NotFoundError) { sessionary.delete_session("app", "ada", "s1") }
    assert_equal [404, "http_error", page], [error.status, error.code, error.detail]
  end
end
