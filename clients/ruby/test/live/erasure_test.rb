# frozen_string_literal: true

require "live_helper"

# Erasing a user, and an app, against a server that runs with keys off, where any caller may
# erase. Each test erases in an app of its own, so that no other test's user is touched.
class ErasureTest < Minitest::Test
  include Helpers

  def setup
    @sessionary = client
    @app = unique("ruby-erase")
  end

  def test_an_erase_removes_the_users_sessions_and_is_read_back_by_its_id
    @sessionary.create_session(@app, "ada", session_id: "chat")
    @sessionary.append_event(@app, "ada", "chat", {author: "user", content: text("Forget me.")})
    @sessionary.create_session(@app, "bob", session_id: "chat")

    erasure = @sessionary.erase_user(@app, "ada")
    assert_equal [@app, "ada", "done"], [erasure.app_name, erasure.user_id, erasure.status]
    assert_equal 1, erasure.removed["sessions"]
    assert_kind_of Float, erasure.finish_time
    assert_empty erasure.deleted_key_ids

    error = assert_raises(Sessionary::SessionNotFoundError) { @sessionary.get_session(@app, "ada", "chat") }
    assert_equal 404, error.status
    assert_equal "bob", @sessionary.get_session(@app, "bob", "chat").user_id # another user's is kept

    read = @sessionary.get_erasure(@app, "ada")
    assert_equal [erasure.id, "done"], [read.id, read.status]
    assert_equal erasure.removed.to_h, read.removed.to_h
  end

  def test_an_app_erase_removes_every_users_sessions_and_its_state_and_is_read_back
    assert_raises(Sessionary::ErasureNotFoundError) { @sessionary.get_app_erasure(@app) }
    %w[ada bob].each { |user| @sessionary.create_session(@app, user, session_id: "chat") }
    @sessionary.update_app_state(@app, {"banner" => "hi"})

    erasure = @sessionary.erase_app(@app)
    assert_equal [@app, "done"], [erasure.app_name, erasure.status]
    assert_equal [2, 1], [erasure.removed["sessions"], erasure.removed["appStates"]]
    refute erasure.to_h.key?("userId")

    assert_raises(Sessionary::SessionNotFoundError) { @sessionary.get_session(@app, "bob", "chat") }
    assert_empty @sessionary.app_state(@app).to_h
    assert_equal erasure.to_h, @sessionary.get_app_erasure(@app).to_h
  end

  def test_a_user_never_erased_has_no_erasure
    error = assert_raises(Sessionary::ErasureNotFoundError) { @sessionary.get_erasure(@app, "never-erased") }
    assert_equal [404, "erasure_not_found"], [error.status, error.code]
    assert_kind_of Sessionary::NotFoundError, error
  end
end
