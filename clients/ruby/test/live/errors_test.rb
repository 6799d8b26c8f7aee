# frozen_string_literal: true

require "live_helper"

# Each problem `code` the server sends raised as its class, with what it carries, and the id
# the server logged the request under.
class ErrorsTest < Minitest::Test
  include Helpers

  def setup
    @sessionary = client
  end

  def test_a_missing_session_is_session_not_found
    error = assert_raises(Sessionary::SessionNotFoundError) { @sessionary.get_session(APP, "ada", unique("none")) }
    assert_equal [404, "session_not_found"], [error.status, error.code]
    assert_match(/does not exist/, error.detail)
    assert_equal error.code, error.problem["code"]
  end

  def test_a_taken_id_is_session_already_exists
    chat = new_session
    assert_raises(Sessionary::SessionAlreadyExistsError) { @sessionary.create_session(APP, "ada", session_id: chat.session_id) }
  end

  def test_an_id_stored_with_other_content_is_event_conflict
    chat = new_session
    chat.append_event({id: "e1", author: "user"})
    assert_equal 1, chat.append_event({id: "e1", author: "user"}).seq # the same again: the stored one
    assert_raises(Sessionary::EventConflictError) { chat.append_event({id: "e1", author: "agent"}) }
  end

  def test_bad_input_is_invalid_request_with_its_errors
    error = assert_raises(Sessionary::InvalidRequestError) do
      @sessionary.create_session(APP, "ada", state: {"k" => 1}, ttl: -1)
    end
    assert_equal 422, error.status
    refute_empty error.errors
  end

  def test_a_body_over_the_limit_is_payload_too_large
    chat = new_session
    error = assert_raises(Sessionary::PayloadTooLargeError) do
      chat.append_event({author: "user", content: text("x" * (17 * 1024 * 1024))})
    end
    assert_equal 413, error.status
  end

  def test_errors_carry_the_request_id_the_server_logged
    error = assert_raises(Sessionary::SessionNotFoundError) do
      @sessionary.get_session(APP, "ada", unique("none"))
    end
    assert_equal [404, "session_not_found"], [error.status, error.code]
    refute_nil error.request_id, "the server names every request"
    assert_equal error.headers["x-request-id"], error.request_id
    # One the caller gives is the server's too.
    error = assert_raises(Sessionary::SessionNotFoundError) do
      @sessionary.get_session(APP, "ada", unique("none"),
                              request_options: {headers: {"X-Request-ID" => "mine-1"}})
    end
    assert_equal "mine-1", error.request_id
  end
end
