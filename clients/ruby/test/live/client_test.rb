# frozen_string_literal: true

require "live_helper"

# Every method against the live server, each named for what it does.
class ClientTest < Minitest::Test
  include Helpers

  def setup
    @sessionary = client
  end

  def teardown
    @sessionary.close
  end

  def test_a_session_is_created_read_and_answers_to_attribute_methods
    user = unique("u")
    made = @sessionary.create_session(APP, user, session_id: unique("s"), state: {"user:units" => "metric", "k" => 1},
                                                 display_name: "Weather", labels: {"team" => "a"})
    read = @sessionary.get_session(APP, user, made.id)
    assert_equal [APP, user, 0, "root"], [read.app_name, read.user_id, read.version, read.kind]
    assert_equal({"user:units" => "metric", "k" => 1}, read.state.to_h)
    assert_equal "metric", read.state["user:units"]
    assert_equal "Weather", read[:displayName]
    assert_equal read.to_h, JSON.parse(read.to_json)
    assert_nil read["noSuchField"]
    assert_raises(NoMethodError) { read.no_such_field }
  end

  def test_events_are_appended_listed_paged_and_counted
    chat = new_session
    stored = chat.append_event({author: "user", content: text("hi")})
    assert_equal 1, stored.seq
    refute_empty stored.id # given by the client, for resends
    batch = chat.append_events([{author: "agent", content: text("one", role: "model")},
                                {"author" => "agent", "content" => text("two", role: "model")}])
    assert_equal [2, 3], batch.map(&:seq)
    page = chat.list_events(page_size: 2)
    assert_equal [1, 2], page.events.map(&:seq)
    refute_nil page.next_page_token
    assert_kind_of Enumerator, chat.events(page_size: 1)
    assert_equal [1, 2, 3], chat.events(page_size: 1).map(&:seq)
    assert_equal [3, 2, 1], chat.events(order: "desc").map(&:seq)
    assert_equal [3], chat.events(after_seq: 2).map(&:seq)
    assert_equal({"count" => 3, "firstSeq" => 1, "lastSeq" => 3}, chat.count_events.to_h)
    assert_equal [3], chat.get(num_recent_events: 1).events.map(&:seq)
    assert_equal 1, chat.get(until_seq: 1).events.size
    assert_equal 3, chat.get(min_version: 3).version
  end

  def test_if_match_writes_only_at_the_version_read
    chat = new_session
    read = chat.get
    chat.append_event({author: "user"}, if_match: read.version)
    error = assert_raises(Sessionary::StaleSessionError) do
      chat.update_state({"step" => 2}, if_match: read.version)
    end
    assert_equal 1, error.current_version
    assert_equal 2, chat.update_state({"step" => 2}, if_match: %("1")).version
    assert_equal 3, chat.append_event({author: "user"}, if_match: "*").seq
    assert_raises(ArgumentError) { chat.append_event({author: "user"}, if_match: "W/1") }
  end

  def test_an_update_changes_name_labels_and_expiry_and_leaves_the_rest
    chat = new_session(display_name: "old", labels: {"a" => "1"})
    updated = chat.update(labels: {"b" => "2"}, ttl: 3600)
    assert_equal ["old", {"b" => "2"}], [updated.display_name, updated.labels.to_h]
    refute_nil updated.expire_time
    cleared = chat.update(display_name: nil, expire_time: nil)
    assert_equal [nil, nil, {"b" => "2"}], [cleared.display_name, cleared.expire_time, cleared.labels.to_h]
  end

  def test_sessions_are_listed_by_user_and_app_with_filters
    user = unique("u")
    ids = 3.times.map { |n| @sessionary.create_session(APP, user, labels: {"n" => n.to_s}).id }
    assert_equal ids, @sessionary.sessions(APP, user, page_size: 2).map(&:id)
    assert_equal ids.reverse, @sessionary.sessions(APP, user, order: "desc").map(&:id)
    assert_equal [ids[1]], @sessionary.sessions(APP, user, labels: {"n" => "1"}).map(&:id)
    page = @sessionary.list_sessions(APP, user, page_size: 1)
    assert_equal [[ids[0]], true], [page.sessions.map(&:id), !page.next_page_token.nil?]
    assert_includes @sessionary.app_sessions(APP, labels: {"n" => "2"}).map(&:id), ids[2]
    assert_equal 1, @sessionary.list_app_sessions(APP, page_size: 1).sessions.size
    assert_includes @sessionary.apps.map(&:app_name), APP
    assert_equal 1, @sessionary.list_apps(page_size: 1).apps.size
    assert_includes @sessionary.users(APP).map(&:user_id), user
    assert_equal 1, @sessionary.list_users(APP, page_size: 1).users.size
  end

  def test_a_session_is_deleted
    chat = new_session
    assert_nil chat.delete
    assert_raises(Sessionary::SessionNotFoundError) { chat.get }
  end

  def test_events_are_rewritten_and_removed_with_their_answers
    chat = new_session
    chat.append_event({id: "c", author: "agent", content: call("call-1", "lookup")})
    chat.append_event({id: "r", author: "agent", content: answer("call-1", "lookup", {"ok" => true})})
    chat.append_event({id: "t", author: "user", content: text("my card is 4242")})
    assert_equal "[redacted]", chat.rewrite_event("t", text("[redacted]")).content.parts[0].text
    assert_raises(Sessionary::ToolPairViolationError) { chat.remove_event("r") }
    assert_equal %w[c r], chat.remove_event("c").removed_event_ids
    assert_equal ["t"], chat.events.map(&:id)
  end

  def test_a_fork_branches_and_a_child_answers_its_parents_call
    chat = new_session
    chat.append_event({author: "user", invocationId: "i1", content: text("plan")})
    chat.append_event({author: "agent", invocationId: "i2", content: call("call-1", "research")})
    fork = chat.fork(before_invocation_id: "i2")
    assert_equal ["fork", 1], [fork.kind, fork.version]
    assert_equal "fork", @sessionary.fork_session(APP, "ada", chat.session_id, at_seq: 2).kind
    child = chat.create_child(function_call_id: "call-1", state: {"topic" => "museums"})
    assert_equal ["child", chat.session_id, "call-1"],
                 [child.kind, child.parent.session_id, child.parent.function_call_id]
    closed = @sessionary.close_session(APP, "ada", child.id, "completed", result: {"found" => 2})
    assert_equal %w[closed completed], [closed.status, closed.outcome]
    response = chat.events(order: "desc").first.content.parts[0].function_response
    assert_equal({"result" => {"found" => 2}, "outcome" => "completed"}, response.response.to_h)
    assert_equal [chat.session_id], @sessionary.lineage(APP, "ada", child.id).map(&:id)
    assert_equal 3, chat.children.count
    assert_equal 1, chat.list_children(page_size: 1).sessions.size
    assert_raises(Sessionary::SessionClosedError) { @sessionary.append_event(APP, "ada", child.id, {author: "user"}) }
  end

  def test_history_surgery_rewinds_trims_and_resets
    chat = new_session
    chat.append_event({author: "user", invocationId: "i1", actions: {stateDelta: {"step" => 1}}})
    chat.append_event({author: "user", invocationId: "i2", actions: {stateDelta: {"step" => 2}}})
    rewound = chat.rewind("i2")
    assert_equal "i2", rewound.actions.rewind_before_invocation_id
    assert_equal 1, chat.get.state["step"]
    trimmed = chat.trim(1)
    assert_equal [2, 1], [trimmed.removed_events, trimmed.kept_events]
    reset = chat.reset
    assert_equal [1, 0], [reset.removed_events, reset.kept_events]
    assert_empty chat.get.state.to_h
  end

  def test_the_context_keeps_a_call_with_its_answer_and_compaction_appends_a_summary
    chat = new_session
    chat.append_event({author: "user", content: text("x" * 400)})
    chat.append_event({author: "agent", content: call("call-1", "lookup", {"q" => "y" * 200})})
    chat.append_event({author: "agent", content: answer("call-1", "lookup", {"r" => "z" * 200})})
    view = chat.context(token_budget: 60)
    assert_equal [2, 3], view.events.map(&:seq) # the pair whole, or nothing of it
    assert_equal 2, view.truncated_before_seq
    summary = chat.compact("summary", summary: "They talked.", keep_last: 0)
    refute_nil summary.actions.compaction
    assert_equal 1, chat.context.events.size
  end

  def test_tool_calls_are_listed_and_orphans_healed
    chat = new_session
    chat.append_event({author: "agent", content: call("call-1", "slow")})
    assert_equal %w[call-1], chat.tool_calls(status: "pending").map(&:id)
    assert_equal ["orphaned"], chat.tool_calls(timeout_seconds: 0).map(&:status)
    assert_equal 1, chat.heal(timeout_seconds: 0).healed
    assert_equal 0, chat.heal(timeout_seconds: 0).healed
    assert_equal ["answered"], chat.tool_calls.map(&:status)
  end

  def test_pending_input_is_queued_promoted_and_cleared
    chat = new_session
    chat.append_event({author: "agent", content: call("call-1", "slow")})
    chat.queue_event({author: "user", content: text("also this")})
    assert_equal 1, chat.pending.size
    error = assert_raises(Sessionary::ToolCallsPendingError) { chat.promote_pending }
    assert_equal ["call-1"], error.call_ids
    assert_equal [2], chat.promote_pending(force: true).map(&:seq)
    chat.queue_event({author: "user"})
    assert_nil chat.clear_pending
    assert_empty chat.pending
  end

  def test_an_export_is_imported_under_another_user_exactly
    chat = new_session
    chat.append_event({author: "user", content: text("keep me")})
    ndjson = chat.export
    assert_equal 2, ndjson.lines.size
    user = unique("u")
    imported = @sessionary.import_session(APP, user, ndjson)
    assert_equal [chat.session_id, 1], [imported.id, imported.version]
    assert_equal imported.to_h, @sessionary.import_session(APP, user, ndjson).to_h # again: nothing new
    assert_equal "keep me", @sessionary.events(APP, user, chat.session_id).first.content.parts[0].text
  end

  def test_search_finds_words_and_usage_sums_tokens
    user = unique("u")
    chat = new_session(user: user)
    word = "marmalade#{SecureRandom.hex(3)}"
    chat.append_event({author: "user", content: text("I like #{word} a lot"),
                       usageMetadata: {promptTokenCount: 5, candidatesTokenCount: 2, totalTokenCount: 7}})
    hits = @sessionary.search(APP, word, user_id: user)
    assert_equal [[chat.session_id, 1]], hits.hits.map { |hit| [hit.session_id, hit.seq] }
    assert_equal 1, @sessionary.search_hits(APP, word, page_size: 1).count
    assert_equal 7, @sessionary.usage(APP, user_id: user).total.total_token_count
  end

  def test_app_and_user_state_are_merged
    app = unique("app") # app state is every session's of the app: not the other tests' app
    user = unique("u")
    assert_equal({"k" => 1}, @sessionary.update_app_state(app, {"k" => 1}).to_h)
    assert_equal({"k" => 1}, @sessionary.app_state(app).to_h)
    assert_equal({"units" => "metric"}, @sessionary.update_user_state(app, user, {"units" => "metric"}).to_h)
    assert_equal({"units" => "metric"}, @sessionary.user_state(app, user).to_h)
  end

  def test_operations_answer
    assert_equal "ok", @sessionary.health.status
    assert_equal "ready", @sessionary.readiness.status
    assert_equal false, @sessionary.key_scope.auth_enabled
    assert_match(/^# TYPE /, @sessionary.metrics)
  end

  def test_ids_that_are_not_url_safe_are_sent_as_ids
    user = unique("a user with ?#% and ü")
    made = @sessionary.create_session(APP, user, session_id: "s 1?#&")
    assert_equal [user, "s 1?#&"], [made.user_id, made.id]
    assert_equal "s 1?#&", @sessionary.get_session(APP, user, "s 1?#&").id
    error = assert_raises(Sessionary::InvalidRequestError) { @sessionary.get_session(APP, user, "..") }
    assert_equal "validation_error", error.code
    assert_kind_of Array, error.errors
  end

  def test_strings_that_are_not_utf8_are_refused_before_they_are_sent
    relay = Relay.new
    sessionary = client(base_url: relay.url)
    chat = new_session(sessionary)
    refused = [
      ["path.session_id", -> { sessionary.get_session(APP, "ada", "s\xFF") }],
      ["path.user_id", -> { sessionary.delete_session(APP, "ada\xFF", chat.session_id) }],
      ["body", -> { sessionary.create_session(APP, "ada", session_id: "t\xFF") }],
      ["body", -> { chat.append_event({id: "e\xFF", author: "user"}) }],
      ["body", -> { chat.append_events([{id: "e\xFE", author: "user"}]) }],
      ["body", -> { chat.update_state({"k\xFF" => 1}) }],
      ["body", -> { sessionary.import_session(APP, "ada", "{\"id\": \"s\xFF\"}\n") }]
    ]
    sent = relay.heads.size
    refused.each do |where, call|
      error = assert_raises(Sessionary::InvalidRequestError, where) { call.call }
      assert_match(/\A#{Regexp.escape(where)}: .* must be valid UTF-8 \(not sent\)\z/, error.detail)
      assert_equal [where.split(".")], error.errors.map { |item| item["loc"] }
    end
    assert_equal sent, relay.heads.size # none was sent
    ["e\u{FFFD}", "e\\ufffd"].each { |id| assert_equal id, chat.append_event({id: id, author: "user"}).id }
  ensure
    sessionary&.close
    relay&.close
  end
end
