# frozen_string_literal: true

require "test_helper"

# What every request carries, whatever its operation: the client's headers and key, ids as
# path segments, event ids, If-Match, the versions that reads ask for after writes, pages.
class SendingTest < Minitest::Test
  include Stubbed

  SESSIONS = "/apps/app/users/ada/sessions"
  SESSION = "#{SESSIONS}/s1"

  def written(version) = {"ETag" => %("#{version}")}

  def test_every_request_names_the_client_and_asks_for_json
    api.on("GET", "/healthz", 200, {"status" => "ok"})
    sessionary.health
    sessionary.health(request_options: {headers: {"User-Agent" => "my-agent/2"}})
    agents = api.requests.map { |request| request.headers.values_at("user-agent", "accept") }
    assert_equal [["sessionary-ruby/#{Sessionary::VERSION}", "application/json"], ["my-agent/2", "application/json"]],
                 agents
  end

  def test_the_key_is_sent_as_a_bearer_token_and_the_base_urls_path_kept
    # A path under a prefix is none of the spec's: answered as text, which the stub does not check.
    api.on("GET", "/sessionary/healthz", 200, '{"status":"ok"}', {"Content-Type" => "application/json"})
    keyed = Sessionary::Client.new(base_url: "#{api.url}/sessionary/", api_key: "sk_test")
    assert_equal "ok", keyed.health.status
    assert_equal "Bearer sk_test", api.requests.last.headers["authorization"]
  ensure
    keyed&.close
  end

  def test_ids_are_percent_encoded_path_segments
    api.on("GET", "/apps/my%20app/users/a%2Fb/sessions/s%201%3F%23%26", 200, StubAPI.session("s 1?#&"))
    api.on("GET", "/apps/app/users/ada/sessions/%2E%2E", 422, StubAPI.problem(422, "validation_error", errors: []))
    assert_equal "s 1?#&", sessionary.get_session("my app", "a/b", "s 1?#&").id
    # A dot segment reaches the server as an id, which it refuses, not resolved away before.
    assert_raises(Sessionary::InvalidRequestError) { sessionary.get_session("app", "ada", "..") }
  end

  def test_strings_that_are_not_utf8_are_refused_before_they_are_sent
    refused = [
      ["path.session_id", -> { sessionary.get_session("app", "ada", "s\xFF") }],
      ["body", -> { sessionary.append_event("app", "ada", "s1", {id: "e\xFF", author: "user"}) }]
    ]
    refused.each do |where, call|
      error = assert_raises(Sessionary::InvalidRequestError, where) { call.call }
      assert_match(/\A#{Regexp.escape(where)}: .* must be valid UTF-8 \(not sent\)\z/, error.detail)
    end
    assert_empty api.requests
  end

  def test_events_without_an_id_are_given_one_and_those_with_one_keep_it
    api.on("POST", "#{SESSION}/events:batch", 201, {"events" => [StubAPI.event(1), StubAPI.event(2)]})
    api.on("POST", "#{SESSION}/pending", 202, {"id" => "q"})
    api.on("POST", SESSIONS, 201, StubAPI.session("s1"))
    sessionary.append_events("app", "ada", "s1", [{author: "user"}, {"id" => "mine", "author" => "user"}])
    sessionary.queue_event("app", "ada", "s1", {author: "user"})
    sessionary.create_session("app", "ada", events: [{author: "user"}])
    batch, queued, created = api.requests.map(&:json)
    given = [batch["events"][0]["id"], queued["id"], created["events"][0]["id"]]
    assert given.all? { |id| id.match?(/\A\h{8}-\h{4}-\h{4}-\h{4}-\h{12}\z/) }, given.inspect
    assert_equal 3, given.uniq.size
    assert_equal "mine", batch["events"][1]["id"]
  end

  def test_if_match_takes_a_version_its_etag_or_a_star
    api.on("POST", "#{SESSION}/events", 201, StubAPI.event(1))
    [7, "7", '"7"', "*"].each { |version| sessionary.append_event("app", "ada", "s1", {id: "e1"}, if_match: version) }
    assert_equal ['"7"', '"7"', '"7"', "*"], api.requests.map { |request| request.headers["if-match"] }
    assert_raises(ArgumentError) { sessionary.append_event("app", "ada", "s1", {}, if_match: "W/1") }
    assert_equal 4, api.requests.size # that one was not sent
  end

  def test_a_memory_write_sends_the_revision_read_as_its_if_match
    memory = OperationsTest.memory("m1", revision: 2)
    api.on("PATCH", "/apps/app/users/ada/memories/m1", 200, memory, written(2))
    api.on("POST", "/apps/app/memories/m1:rollback", 200, memory.merge("userId" => nil, "scope" => "app"), written(2))
    api.on("DELETE", "/apps/app/users/ada/memories/m1", 204)
    sessionary.update_memory("app", "ada", "m1", text: "x", if_match: 1)
    sessionary.roll_back_app_memory("app", "m1", 1, if_match: '"1"')
    sessionary.delete_memory("app", "ada", "m1", if_match: memory["revision"])
    sessionary.delete_memory("app", "ada", "m1")
    assert_equal ['"1"', '"1"', '"2"', nil], api.requests.map { |request| request.headers["if-match"] }
  end

  def test_reads_after_a_write_ask_for_the_version_it_made
    api.on("POST", SESSIONS, 201, StubAPI.session("s1"), written(0))
    api.on("GET", SESSION, 200, StubAPI.session("s1", version: 2))
    api.on("POST", "#{SESSION}/events:batch", 201, {"events" => [StubAPI.event(1), StubAPI.event(2)]}, written(2))
    api.on("GET", "#{SESSION}/events", 200, {"events" => [], "nextPageToken" => nil})
    api.on("POST", "#{SESSION}:fork", 201, StubAPI.session("f1", kind: "fork", version: 2), written(2))
    api.on("GET", "#{SESSIONS}/f1", 200, StubAPI.session("f1", kind: "fork", version: 2))
    api.on("DELETE", SESSION, 204)
    sessionary.create_session("app", "ada", session_id: "s1")
    sessionary.get_session("app", "ada", "s1")
    sessionary.append_events("app", "ada", "s1", [{author: "user"}, {author: "user"}])
    sessionary.events("app", "ada", "s1").to_a
    sessionary.get_session("app", "ada", "s1", min_version: 1) # the caller's own
    sessionary.fork_session("app", "ada", "s1", session_id: "f1")
    sessionary.get_session("app", "ada", "f1")
    sessionary.delete_session("app", "ada", "s1")
    sessionary.get_session("app", "ada", "s1")
    reads = api.requests.select { |request| request.method == "GET" }.map { |request| request.query["minVersion"] }
    assert_equal ["0", "2", "1", "2", nil], reads # created at 0, then 2 events; the fork's; deleted
  end

  def test_reads_after_an_erase_of_the_user_ask_for_no_version_it_had
    erased = {"id" => "er1", "appName" => "app", "userId" => "ada", "status" => "done", "removed" => {},
              "deletedKeyIds" => [], "createTime" => 1.5, "updateTime" => 1.5, "finishTime" => 1.5}
    api.on("POST", SESSIONS, 201, StubAPI.session("s1"), written(3))
    api.on("POST", "/apps/app/users/bob/sessions", 201, StubAPI.session("s1", user: "bob"), written(4))
    api.on("DELETE", "/apps/app/users/ada", 200, erased)
    api.on("GET", SESSION, 200, StubAPI.session("s1"))
    api.on("GET", "/apps/app/users/bob/sessions/s1", 200, StubAPI.session("s1", user: "bob"))
    sessionary.create_session("app", "ada", session_id: "s1")
    sessionary.create_session("app", "bob", session_id: "s1")
    sessionary.erase_user("app", "ada")
    sessionary.get_session("app", "ada", "s1")
    sessionary.get_session("app", "bob", "s1")
    reads = api.requests.select { |request| request.method == "GET" }.map { |request| request.query["minVersion"] }
    assert_equal [nil, "4"], reads # ada's sessions are gone (new ones may take their ids); bob's not
  end

  def test_reads_after_an_erase_of_the_app_ask_for_no_version_it_had
    erased = {"id" => "er2", "appName" => "app", "status" => "done", "removed" => {}, "deletedKeyIds" => [],
              "createTime" => 1.5, "updateTime" => 1.5, "finishTime" => 1.5}
    api.on("POST", SESSIONS, 201, StubAPI.session("s1"), written(3))
    api.on("POST", "/apps/other/users/ada/sessions", 201, StubAPI.session("s1", app: "other"), written(4))
    api.on("DELETE", "/apps/app", 200, erased)
    api.on("GET", SESSION, 200, StubAPI.session("s1"))
    api.on("GET", "/apps/other/users/ada/sessions/s1", 200, StubAPI.session("s1", app: "other"))
    sessionary.create_session("app", "ada", session_id: "s1")
    sessionary.create_session("other", "ada", session_id: "s1")
    sessionary.erase_app("app")
    sessionary.get_session("app", "ada", "s1")
    sessionary.get_session("other", "ada", "s1")
    reads = api.requests.select { |request| request.method == "GET" }.map { |request| request.query["minVersion"] }
    assert_equal [nil, "4"], reads # the app's sessions are gone; another app's are not
  end

  def test_an_update_sends_only_what_is_given_and_nil_where_it_clears
    api.on("PATCH", SESSION, 200, StubAPI.session("s1"))
    sessionary.update_session("app", "ada", "s1", labels: {"b" => "2"}, ttl: 3600)
    sessionary.update_session("app", "ada", "s1", display_name: nil, expire_time: nil)
    assert_equal [{"labels" => {"b" => "2"}, "ttl" => 3600}, {"displayName" => nil, "expireTime" => nil}],
                 api.requests.map(&:json)
  end

  def test_listings_fetch_each_page_when_the_iteration_reaches_it
    pages = {nil => ["t1", "s1"], "t1" => ["t2", "s2"], "t2" => [nil, "s3"]}
    api.on("GET", SESSIONS) do |request|
      token, id = pages.fetch(request.query["pageToken"])
      [200, {"sessions" => [StubAPI.session(id)], "nextPageToken" => token}]
    end
    assert_equal ["s1"], sessionary.sessions("app", "ada", page_size: 1).first(1).map(&:id)
    assert_equal 1, api.requests.size
    assert_equal %w[s1 s2 s3], sessionary.sessions("app", "ada", page_size: 1).map(&:id)
    assert_equal [nil, nil, "t1", "t2"], api.requests.map { |request| request.query["pageToken"] }
    assert_equal ["1"], api.requests.map { |request| request.query["pageSize"] }.uniq
  end

  def test_an_answer_reads_as_a_record
    api.on("GET", SESSION, 200, StubAPI.session("s1", state: {"user:units" => "metric"}, displayName: "Weather"))
    read = sessionary.get_session("app", "ada", "s1")
    assert_equal ["app", "Weather", "metric", "metric"],
                 [read.app_name, read.display_name, read.state["user:units"], read.dig(:state, "user:units")]
    assert_equal [0, 0], [read[:version], read["usage"].total_token_count]
    assert_equal read.to_h, JSON.parse(read.to_json)
    assert_nil read["noSuchField"]
    assert_raises(NoMethodError) { read.no_such_field }
    assert read.respond_to?(:expire_time)
  end
end
