# frozen_string_literal: true

require "test_helper"
require "time"

# What every call shares, whatever the operation: the server's Retry-After, options of one
# call, the request id on every error, the User-Agent; against canned servers and the live one.
class RequestTest < Minitest::Test
  include Helpers

  OK = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 15\r\n\r\n" \
       "{\"status\":\"ok\"}"

  def unavailable(retry_after = nil)
    body = '{"type":"about:blank","title":"Busy","status":503,"detail":"busy","code":"search_busy"}'
    "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/problem+json\r\n" \
      "#{retry_after && "Retry-After: #{retry_after}\r\n"}Content-Length: #{body.bytesize}\r\n\r\n#{body}"
  end

  def test_a_resend_waits_the_retry_after_the_server_asks
    server = CannedServer.new(unavailable(1), OK)
    # The client's own backoff would resend within a millisecond.
    sessionary = Sessionary::Client.new(base_url: server.url, backoff: 0.001)
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    assert_equal "ok", sessionary.health.status
    waited = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
    assert_equal 2, server.requests
    assert_operator waited, :>=, 1, "resent after #{waited} s, not the second asked"
  ensure
    server&.close
  end

  def test_a_stream_opened_at_a_busy_server_waits_its_retry_after
    frame = "event: closed\ndata: {}\n\n"
    stream = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n" \
             "Content-Length: #{frame.bytesize}\r\n\r\n#{frame}"
    server = CannedServer.new(unavailable(1), stream)
    sessionary = Sessionary::Client.new(base_url: server.url, backoff: 0.001)
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    assert_equal ["closed"], sessionary.stream_events("a", "u", "s").map(&:event)
    assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - started, :>=, 1
    assert_equal 2, server.requests
  ensure
    server&.close
  end

  def test_retry_after_is_seconds_or_a_date_and_at_most_a_minute
    waits = ["1", "0.5", "0", "3600", (Time.now + 3600).httpdate, (Time.now - 3600).httpdate]
            .map { |value| Sessionary::Transport.retry_after(value) }
    assert_equal [1, 0.5, 0, 60, 60, 0], waits
    [nil, "", "soon", "-1", "NaN"].each do |value|
      assert_nil Sessionary::Transport.retry_after(value), "#{value.inspect}: the client's backoff"
    end
  end

  def test_a_calls_own_timeout_headers_and_retries_over_the_clients
    server = CannedServer.new(OK, OK, unavailable, unavailable, unavailable, unavailable)
    sessionary = Sessionary::Client.new(base_url: server.url, headers: {"X-Team" => "a"}, backoff: 0.001)
    sessionary.health(request_options: {headers: {"X-Request-ID" => "call-1", "X-Team" => "b"}})
    sessionary.health
    first, second = server.heads
    assert_match(/^X-Request-ID: call-1\r$/i, first)
    assert_match(/^X-Team: b\r$/i, first)
    assert_match(/^X-Team: a\r$/i, second, "a call's headers are its own")
    # Resent twice by default (a read, a 503); once only with max_retries: 0.
    assert_raises(Sessionary::ServiceUnavailableError) do
      sessionary.readiness(request_options: {max_retries: 0})
    end
    assert_equal 3, server.requests
    assert_raises(Sessionary::ServiceUnavailableError) { sessionary.readiness }
    assert_equal 6, server.requests
    assert_raises(ArgumentError) { sessionary.health(request_options: {timeuot: 1}) }
  ensure
    server&.close
  end

  def test_a_calls_own_timeout
    # The client waits 10 s between bytes of an answer, which comes in half a second; this call
    # half of that.
    server = CannedServer.new(-> { sleep(0.5); OK })
    sessionary = Sessionary::Client.new(base_url: server.url, retries: 0)
    sessionary.health
    error = assert_raises(Sessionary::APITimeoutError) do
      sessionary.health(request_options: {timeout: 0.05, headers: {"X-Request-ID" => "call-2"}})
    end
    assert_equal "call-2", error.request_id
  ensure
    server&.close
  end

  def test_a_streams_own_retries_and_headers
    ended = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 0\r\n\r\n"
    server = CannedServer.new(ended) # each connection ends at once
    sessionary = Sessionary::Client.new(base_url: server.url, backoff: 0.001)
    error = assert_raises(Sessionary::APIConnectionError) do
      options = {max_retries: 1, headers: {"X-Request-ID" => "call-3"}}
      sessionary.stream_sessions("a", "u", request_options: options) {}
    end
    assert_equal "call-3", error.request_id
    assert_equal 2, server.requests # opened again once
    assert_match(/^X-Request-ID: call-3\r$/i, server.heads.last)
  ensure
    server&.close
  end

  def test_errors_carry_the_status_the_code_the_headers_and_the_request_id
    sessionary = client
    error = assert_raises(Sessionary::SessionNotFoundError) do
      sessionary.get_session(APP, "ada", unique("none"))
    end
    assert_equal [404, "session_not_found"], [error.status, error.code]
    refute_nil error.request_id, "the server names every request"
    assert_equal error.headers["x-request-id"], error.request_id
    # One the caller gives is the server's too.
    error = assert_raises(Sessionary::SessionNotFoundError) do
      sessionary.get_session(APP, "ada", unique("none"),
                             request_options: {headers: {"X-Request-ID" => "mine-1"}})
    end
    assert_equal "mine-1", error.request_id
    port = TCPServer.open("127.0.0.1", 0) { |listener| listener.addr[1] } # refused once closed
    down = Sessionary::Client.new(base_url: "http://127.0.0.1:#{port}", retries: 0,
                                  headers: {"X-Request-ID" => "mine-2"})
    assert_equal "mine-2", assert_raises(Sessionary::APIConnectionError) { down.health }.request_id
  end

  def test_every_request_names_the_client
    server = CannedServer.new(OK)
    sessionary = Sessionary::Client.new(base_url: server.url)
    sessionary.health
    sessionary.health(request_options: {headers: {"User-Agent" => "my-agent/2"}})
    agents = server.heads.map { |head| head[/^User-Agent: (.*)\r$/i, 1] }
    assert_equal ["sessionary-ruby/#{Sessionary::VERSION}", "my-agent/2"], agents
  ensure
    server&.close
  end
end
