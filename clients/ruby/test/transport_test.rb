# frozen_string_literal: true

require "test_helper"

# Connections, resends and the errors of requests that got no answer, over a relay that loses
# answers on purpose and servers that answer what a proxy would.
class TransportTest < Minitest::Test
  include Helpers

  def test_requests_share_one_keep_alive_connection
    relay = Relay.new
    sessionary = client(base_url: relay.url)
    5.times { sessionary.health }
    assert_equal 1, relay.connections
  ensure
    relay.close
  end

  def test_an_append_whose_answer_was_lost_is_sent_again_and_stored_once
    lost = false
    relay = Relay.new do |head, _chunk|
      next :relay if lost || !head.start_with?("POST ") || !head.include?("/events ")

      lost = true
      :drop
    end
    chat = new_session(client(base_url: relay.url, backoff: 0.01))
    stored = chat.append_event({author: "user", content: text("once")})
    assert lost
    assert_equal 1, stored.seq
    assert_equal 1, chat.count_events["count"]
    ids = relay.sent.scan(/"id":"([^"]+)"/).flatten
    assert_equal [stored.id, stored.id], ids # the same generated id, sent twice
  ensure
    relay&.close
  end

  def test_a_create_whose_answer_was_lost_is_not_sent_again
    relay = Relay.new { |head, _chunk| head.start_with?("POST ") ? :drop : :relay }
    sessionary = client(base_url: relay.url, backoff: 0.01)
    id = unique("s")
    error = assert_raises(Sessionary::APIConnectionError) { sessionary.create_session(APP, "ada", session_id: id) }
    assert_kind_of EOFError, error.cause
    assert_equal 1, relay.heads.count { |head| head.start_with?("POST ") }
    assert_equal id, client.get_session(APP, "ada", id).id # it was done: a resend would have been a 409
  ensure
    relay&.close
  end

  def test_a_refused_connection_is_an_api_connection_error
    port = TCPServer.open("127.0.0.1", 0) { |server| server.addr[1] } # free once closed
    sessionary = Sessionary::Client.new(base_url: "http://127.0.0.1:#{port}", backoff: 0.01)
    error = assert_raises(Sessionary::APIConnectionError) { sessionary.create_session(APP, "ada") }
    assert_kind_of Errno::ECONNREFUSED, error.cause
  end

  def test_a_proxys_503_is_a_service_unavailable_error_resent_only_for_reads
    page = "<html>busy</html>"
    server = CannedServer.new("HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/html\r\n" \
                              "Content-Length: #{page.bytesize}\r\n\r\n#{page}")
    sessionary = Sessionary::Client.new(base_url: server.url, retries: 2, backoff: 0.01)
    error = assert_raises(Sessionary::ServiceUnavailableError) { sessionary.get_session(APP, "ada", "s") }
    assert_equal [503, "http_error", page], [error.status, error.code, error.detail]
    assert_equal 3, server.requests # once, then twice again
    assert_raises(Sessionary::ServiceUnavailableError) { sessionary.create_session(APP, "ada") }
    assert_equal 4, server.requests # a create is sent once: a resend could make two
  ensure
    server&.close
  end

  def test_no_answer_in_time_is_an_api_timeout_error
    server = CannedServer.new(nil)
    sessionary = Sessionary::Client.new(base_url: server.url, timeout: 0.3, retries: 1, backoff: 0.01)
    error = assert_raises(Sessionary::APITimeoutError) { sessionary.health }
    assert_kind_of Sessionary::APIConnectionError, error
    assert_equal 2, server.requests # a read is resent after a timeout
  ensure
    server&.close
  end

  def test_reads_after_a_write_ask_for_the_version_it_made
    relay = Relay.new
    sessionary = client(base_url: relay.url)
    made = sessionary.create_session(APP, "ada", session_id: unique("s"))
    chat = sessionary.session(APP, "ada", made.id)
    chat.get
    chat.append_events([{author: "user"}, {author: "user"}])
    chat.events.to_a
    fork = chat.fork
    sessionary.get_session(APP, "ada", fork.id)
    chat.delete
    assert_raises(Sessionary::SessionNotFoundError) { chat.get }
    reads = relay.heads.select { |head| head.start_with?("GET ") }.map { |head| head[/minVersion=(\d+)/, 1] }
    assert_equal ["0", "2", "2", nil], reads # created at 0, then 2 events; the fork's; deleted
  ensure
    relay&.close
  end

  def test_one_client_serves_many_threads
    chat = new_session
    threads = 8.times.map { |n| Thread.new { 5.times { |m| chat.append_event({author: "t#{n}", id: "e#{n}-#{m}"}) } } }
    threads.each(&:join)
    assert_equal (1..40).to_a, chat.events.map(&:seq)
  end
end
