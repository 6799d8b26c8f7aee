# frozen_string_literal: true

require "socket"
require "test_helper"
require "time"

# What is sent again, when and how often, and what a call raises when no answer came: the
# server's Retry-After, a call's own timeout, headers and retries, lost answers, proxies.
class ResendTest < Minitest::Test
  include Stubbed

  EVENTS = "/apps/app/users/ada/sessions/s1/events"
  OK = {"status" => "ok"}.freeze
  STREAM = {"Content-Type" => "text/event-stream"}.freeze

  def busy(retry_after = nil)
    [503, StubAPI.problem(503, "search_busy", "busy"), retry_after ? {"Retry-After" => retry_after} : {}]
  end

  def clock = Process.clock_gettime(Process::CLOCK_MONOTONIC)

  def test_a_resend_waits_the_retry_after_the_server_asks
    # The client's own backoff would resend within a millisecond.
    api.on("GET", "/healthz") { |_request, n| n == 1 ? busy("1") : [200, OK] }
    started = clock
    assert_equal "ok", sessionary.health.status
    waited = clock - started
    assert_equal 2, api.requests.size
    assert_operator waited, :>=, 1, "resent after #{waited} s, not the second asked"
  end

  def test_a_stream_opened_at_a_busy_server_waits_its_retry_after
    api.on("GET", "/apps/a/users/u/sessions/s/events:stream") do |_request, n|
      n == 1 ? busy("1") : [200, "event: closed\ndata: {\"version\": 1, \"outcome\": \"completed\"}\n\n", STREAM]
    end
    started = clock
    assert_equal ["closed"], sessionary.stream_events("a", "u", "s").map(&:event)
    assert_operator clock - started, :>=, 1
    assert_equal 2, api.requests.size
  end

  def test_retry_after_is_seconds_or_a_date_and_at_most_a_minute
    waits = ["1", "0.5", "0", "3600", (Time.now + 3600).httpdate, (Time.now - 3600).httpdate]
            .map { |value| Sessionary::Transport.retry_after(value) }
    assert_equal [1, 0.5, 0, 60, 60, 0], waits
    [nil, "", "soon", "-1", "NaN"].each do |value|
      assert_nil Sessionary::Transport.retry_after(value), "#{value.inspect}: the client's backoff"
    end
  end

  def test_a_calls_own_headers_and_retries_over_the_clients
    api.on("GET", "/healthz", 200, OK)
    api.on("GET", "/readyz") { busy }
    teamed = Sessionary::Client.new(base_url: api.url, headers: {"X-Team" => "a"}, backoff: 0.001)
    teamed.health(request_options: {headers: {"X-Request-ID" => "call-1", "X-Team" => "b"}})
    teamed.health
    first, second = api.requests.map(&:headers)
    assert_equal %w[call-1 b], first.values_at("x-request-id", "x-team")
    assert_equal [nil, "a"], second.values_at("x-request-id", "x-team"), "a call's headers are its own"
    # Resent twice by default (a read, a 503); once only with max_retries: 0.
    assert_raises(Sessionary::ServiceUnavailableError) { teamed.readiness(request_options: {max_retries: 0}) }
    assert_equal 1, api.requests("/readyz").size
    assert_raises(Sessionary::ServiceUnavailableError) { teamed.readiness }
    assert_equal 4, api.requests("/readyz").size
    assert_raises(ArgumentError) { teamed.health(request_options: {timeuot: 1}) }
  ensure
    teamed&.close
  end

  def test_a_calls_own_timeout
    # The client waits 10 s between bytes of an answer, which comes in half a second; this call
    # a tenth of that.
    api.on("GET", "/healthz") { sleep(0.5) && [200, OK] }
    sessionary.health
    error = assert_raises(Sessionary::APITimeoutError) do
      sessionary.health(request_options: {timeout: 0.05, max_retries: 0, headers: {"X-Request-ID" => "call-2"}})
    end
    assert_equal "call-2", error.request_id
  end

  def test_a_streams_own_retries_and_headers
    api.on("GET", "/apps/a/users/u/sessions:stream", 200, "", STREAM) # each connection ends at once
    error = assert_raises(Sessionary::APIConnectionError) do
      options = {max_retries: 1, headers: {"X-Request-ID" => "call-3"}}
      sessionary.stream_sessions("a", "u", request_options: options) {}
    end
    assert_equal "call-3", error.request_id
    assert_equal [%w[call-3]] * 2, api.requests.map { |request| [request.headers["x-request-id"]] } # opened again once
  end

  def test_an_append_whose_answer_was_lost_is_sent_again_with_the_same_id
    api.on("POST", EVENTS) { |request, n| n == 1 ? nil : [200, StubAPI.event(1, "id" => request.json["id"])] }
    stored = sessionary.append_event("app", "ada", "s1", {author: "user"})
    ids = api.requests.map { |request| request.json["id"] }
    assert_equal [stored.id, stored.id], ids # the same generated id, sent twice
    assert_match(/\A\h{8}-\h{4}-\h{4}-\h{4}-\h{12}\z/, stored.id)
  end

  def test_a_create_whose_answer_was_lost_is_not_sent_again
    api.on("POST", "/apps/app/users/ada/sessions") { nil }
    error = assert_raises(Sessionary::APIConnectionError) { sessionary.create_session("app", "ada", session_id: "s1") }
    assert_kind_of EOFError, error.cause
    assert_equal 1, api.requests.size
  end

  def test_an_erase_whose_answer_was_lost_is_not_sent_again
    # A resend, once the first is done, would be a second erase, answered with its counts (none).
    api.on("DELETE", "/apps/app/users/ada") { nil }
    assert_raises(Sessionary::APIConnectionError) { sessionary.erase_user("app", "ada") }
    assert_equal 1, api.requests.size
  end

  def test_an_app_erase_whose_answer_was_lost_is_not_sent_again
    api.on("DELETE", "/apps/app") { nil }
    assert_raises(Sessionary::APIConnectionError) { sessionary.erase_app("app") }
    assert_equal 1, api.requests.size
  end

  def test_a_recall_or_a_remember_whose_answer_was_lost_is_sent_again_a_memory_write_is_not
    recalled = {"memories" => [], "recalledBy" => "words", "note" => nil}
    api.on("POST", "/apps/app/users/ada/memories:recall") { |_request, n| n == 1 ? nil : [200, recalled] }
    api.on("POST", "/apps/app/memories:recall") { |_request, n| n == 1 ? nil : [200, recalled] }
    api.on("POST", "/apps/app/users/ada/sessions/s1:remember") { |_request, n| n == 1 ? nil : [200, {"remembered" => 0}] }
    assert_equal "words", sessionary.recall_memories("app", "ada", "food").recalled_by
    assert_equal "words", sessionary.recall_app_memories("app", "food").recalled_by
    assert_equal 0, sessionary.remember_session("app", "ada", "s1").remembered
    assert_equal 6, api.requests.size # each twice: a recall reads, a second remember adds nothing
    api.on("POST", "/apps/app/users/ada/memories") { nil }
    api.on("PATCH", "/apps/app/memories/m1") { nil }
    assert_raises(Sessionary::APIConnectionError) { sessionary.create_memory("app", "ada", text: "x") }
    assert_raises(Sessionary::APIConnectionError) { sessionary.update_app_memory("app", "m1", text: "y") }
    assert_equal 8, api.requests.size # each once: a resend could make two, or two revisions
  end

  def test_a_refused_connection_is_an_api_connection_error
    port = TCPServer.open("127.0.0.1", 0) { |server| server.addr[1] } # free once closed
    down = Sessionary::Client.new(base_url: "http://127.0.0.1:#{port}", backoff: 0.001,
                                  headers: {"X-Request-ID" => "mine-2"})
    error = assert_raises(Sessionary::APIConnectionError) { down.create_session("app", "ada") }
    assert_kind_of Errno::ECONNREFUSED, error.cause
    assert_equal "mine-2", error.request_id
  end

  def test_a_proxys_503_is_a_service_unavailable_error_resent_only_for_reads
    page = "<html>busy</html>"
    api.on("GET", "/apps/app/users/ada/sessions/s1", 503, page, {"Content-Type" => "text/html"})
    api.on("POST", "/apps/app/users/ada/sessions", 503, page, {"Content-Type" => "text/html"})
    error = assert_raises(Sessionary::ServiceUnavailableError) { sessionary.get_session("app", "ada", "s1") }
    assert_equal [503, "http_error", page], [error.status, error.code, error.detail]
    assert_equal 3, api.requests.size # once, then twice again
    assert_raises(Sessionary::ServiceUnavailableError) { sessionary.create_session("app", "ada") }
    assert_equal 4, api.requests.size # a create is sent once: a resend could make two
  end

  def test_no_answer_in_time_is_an_api_timeout_error
    api.on("GET", "/healthz") { sleep } # never answers
    waiting = Sessionary::Client.new(base_url: api.url, timeout: 0.3, retries: 1, backoff: 0.001)
    error = assert_raises(Sessionary::APITimeoutError) { waiting.health }
    assert_kind_of Sessionary::APIConnectionError, error
    assert_equal 2, api.requests.size # a read is resent after a timeout
  ensure
    waiting&.close
  end

  def test_requests_share_one_keep_alive_connection
    api.on("GET", "/healthz", 200, OK)
    5.times { sessionary.health }
    assert_equal 1, api.connections
  end
end
