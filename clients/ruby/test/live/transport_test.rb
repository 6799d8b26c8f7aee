# frozen_string_literal: true

require "live_helper"

# Connections and resends against the live server, over a relay that loses answers on purpose.
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
