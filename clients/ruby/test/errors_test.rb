# frozen_string_literal: true

require "test_helper"

# Each problem `code` raised as its class, with what it carries.
class ErrorsTest < Minitest::Test
  include Helpers

  def setup
    @sessionary = client
  end

  def test_the_tree_of_errors
    assert_operator Sessionary::SessionNotFoundError, :<, Sessionary::NotFoundError
    assert_operator Sessionary::ToolCallsPendingError, :<, Sessionary::ConflictError
    assert_operator Sessionary::APITimeoutError, :<, Sessionary::APIConnectionError
    assert_operator Sessionary::APIError, :<, Sessionary::Error
    assert_operator Sessionary::Error, :<, StandardError
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
end
