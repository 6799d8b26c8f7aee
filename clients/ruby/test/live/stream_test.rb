# frozen_string_literal: true

require "live_helper"
require "timeout"

# Live streams: the log, then live, until the session closes; resumed after a lost connection
# with Last-Event-ID, losing and repeating nothing.
class StreamTest < Minitest::Test
  include Helpers

  def test_a_stream_replays_the_log_goes_on_live_and_ends_at_the_close
    chat = new_session
    chat.append_event({author: "user"})
    frames = Queue.new
    watcher = Thread.new { chat.stream_events(after_seq: 0) { |frame| frames << frame } }
    assert_equal [1, "appended"], frames.pop.then { |frame| [frame.id, frame.event] }
    chat.append_event({author: "agent", content: text("live", role: "model")})
    chat.close("completed")
    watcher.join(30)
    rest = Array.new(frames.size) { frames.pop }
    assert_equal [[2, "appended", "agent"], [3, "closed", nil]],
                 rest.map { |frame| [frame.id, frame.event, frame.data["author"]] }
    assert_equal "completed", rest.last.data.outcome
  end

  def test_a_stream_is_an_enumerator_without_a_block
    chat = new_session
    chat.append_event({author: "user"})
    chat.append_event({author: "user"})
    stream = chat.stream_events(after_seq: 0)
    assert_kind_of Enumerator, stream
    assert_equal [1, 2], stream.first(2).map(&:id) # leaving the stream closes its connection
  end

  def test_a_lost_connection_is_resumed_after_the_last_event
    chat = new_session
    chat.append_event({author: "user"})
    cut = Queue.new
    relay = Relay.new do |head, chunk|
      next :relay unless cut.empty? && head.include?("events:stream") && chunk.include?("event: appended")

      cut << true # once: it stays in the queue
      :cut
    end
    frames = Queue.new
    stream = client(base_url: relay.url, backoff: 0.01).session(APP, "ada", chat.session_id)
    watcher = Thread.new { stream.stream_events(after_seq: 0) { |frame| frames << frame.id } }
    sleep(0.01) while cut.empty?
    chat.append_event({author: "user"})
    chat.close("completed")
    watcher.join(30)
    assert_equal [1, 2, 3], Array.new(frames.size) { frames.pop }
    resumed = relay.heads.select { |head| head.include?("events:stream") }
    assert_equal 2, resumed.size
    assert_match(/^Last-Event-ID: 0\r$/i, resumed.first) # after_seq: 0
    assert_match(/^Last-Event-ID: 1\r$/i, resumed.last)
  ensure
    relay&.close
  end

  def test_the_stream_of_a_missing_session_raises_at_once
    assert_raises(Sessionary::SessionNotFoundError) do
      client.stream_events(APP, "ada", unique("none")).first
    end
  end

  def test_a_users_stream_announces_its_sessions
    user = unique("u")
    heard = follow_sessions(user) { |sessionary| sessionary.stream_sessions(APP, user) }
    assert_equal %w[created closed], [heard.first.event, heard.last.event]
  end

  def test_an_apps_stream_announces_its_users_sessions
    user = unique("u")
    heard = follow_sessions(user) { |sessionary| sessionary.stream_app_sessions(APP) }
    assert_equal %w[created closed], [heard.first.event, heard.last.event]
  end

  def test_an_erase_ends_the_users_stream_after_deleted_and_erased_and_the_apps_goes_on
    user, other = unique("u"), unique("u")
    relay = Relay.new
    sessionary = client(base_url: relay.url, backoff: 0.01)
    made = sessionary.create_session(APP, user)
    mine = Queue.new
    watcher = Thread.new { sessionary.stream_sessions(APP, user) { |frame| mine << frame } }
    everyone = Queue.new
    apps = Thread.new do
      sessionary.stream_app_sessions(APP) do |frame|
        everyone << frame if [user, other].include?(frame.data["userId"])
      end
    end
    sleep(1.5) # both connected: they tell what happens from now
    sessionary.erase_user(APP, user)
    assert watcher.join(30), "the user's stream ended by itself" # opened again, it would wait on
    heard = Array.new(mine.size) { mine.pop }
    assert_equal [["deleted", made.id], ["erased", nil]],
                 heard.map { |frame| [frame.event, frame.data["sessionId"]] }
    assert_equal({"userId" => user}, heard.last.data.to_h)
    assert_equal 1, relay.heads.count { |head| head.include?("/users/#{user}/sessions:stream") }

    # The app's stream is told, and goes on: it hears a session created afterwards.
    sessionary.create_session(APP, other)
    told = []
    Timeout.timeout(30) { told << everyone.pop until told.last&.event == "created" }
    erased = told.select { |frame| frame.event == "erased" }
    assert_equal [{"userId" => user}], erased.map { |frame| frame.data.to_h }
    assert_equal other, told.last.data["userId"]
  ensure
    [watcher, apps].each { |thread| thread&.kill }
    relay&.close
  end

  private

  # What a sessions' stream (the block's Enumerator) heard of `user`'s sessions while they were
  # created until it heard one (it starts from now, so it may open after the first) and the
  # last one closed: up to that close.
  def follow_sessions(user)
    sessionary = client
    frames = Queue.new
    stream = yield(sessionary)
    watcher = Thread.new do
      stream.each do |frame|
        next unless frame.data["userId"] == user

        frames << frame
        break if frame.event == "closed"
      end
    end
    made = sessionary.create_session(APP, user) while frames.empty? && sleep(0.1)
    sessionary.close_session(APP, user, made.id, "completed")
    watcher.join(30)
    Array.new(frames.size) { frames.pop }
  end
end
