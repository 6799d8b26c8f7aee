# frozen_string_literal: true

require "live_helper"

# The audit log against a server that runs with keys off: /audit is open, and a record names no
# key. Each test deletes in an app of its own, whose records are its alone.
class AuditTest < Minitest::Test
  include Helpers

  def setup
    @sessionary = client
    @app = unique("ruby-audit")
  end

  def test_a_session_delete_is_recorded_by_pseudonyms_and_found_by_its_user
    started = Time.now.to_f
    @sessionary.create_session(@app, "ada", session_id: "private-chat")
    @sessionary.delete_session(@app, "ada", "private-chat")

    page = @sessionary.list_audit_records(app_name: @app, user_id: "ada", action: "session.delete")
    assert_nil page.next_page_token
    assert_equal 1, page.records.size
    record = page.records.first
    assert_equal ["session.delete", nil, @app, "ok"], [record.action, record.key_id, record.app_name, record.outcome]
    assert_in_delta started, record.time, 60
    # The user and the session are named by keyed hashes, never by their ids.
    assert_kind_of String, record.user
    assert_match(/\A[0-9a-f]{32}\z/, record.user) # a hash (which may hold "ada" by chance)
    assert_kind_of String, record.detail.session
    refute_includes record.to_json, "private-chat"

    assert_equal [record], @sessionary.audit_records(app_name: @app).to_a
    assert_empty @sessionary.list_audit_records(app_name: @app, user_id: "bob").records
    assert_equal [record], @sessionary.list_audit_records(app_name: @app, after_timestamp: started - 60).records
    assert_empty @sessionary.list_audit_records(app_name: @app, before_timestamp: started - 60).records
  end

  def test_records_are_paged_newest_first
    %w[s1 s2 s3].each do |id|
      @sessionary.create_session(@app, "ada", session_id: id)
      @sessionary.delete_session(@app, "ada", id)
    end
    first = @sessionary.list_audit_records(app_name: @app, page_size: 2)
    assert_equal 2, first.records.size
    assert_kind_of String, first.next_page_token
    rest = @sessionary.list_audit_records(app_name: @app, page_size: 2, page_token: first.next_page_token)
    assert_equal [1, nil], [rest.records.size, rest.next_page_token]
    seqs = (first.records + rest.records).map(&:seq)
    assert_equal seqs.sort.reverse, seqs
    assert_equal seqs, @sessionary.audit_records(app_name: @app, page_size: 1).map(&:seq)
  end

  def test_a_user_without_an_app_is_refused
    error = assert_raises(Sessionary::InvalidRequestError) { @sessionary.list_audit_records(user_id: "ada") }
    assert_equal [422, "validation_error"], [error.status, error.code]
  end
end
