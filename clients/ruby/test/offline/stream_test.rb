# frozen_string_literal: true

require "test_helper"

# Streams parsed as the API sends them, and resumed after a lost connection with
# Last-Event-ID, losing and repeating nothing.
class StreamParsingTest < Minitest::Test
  include Stubbed

  STREAM = "/apps/app/users/ada/sessions/s1/events:stream"

  def frame(event, id, data) = "event: #{event}\nid: #{id}\ndata: #{JSON.generate(data)}\n\n"

  def test_frames_are_parsed_across_chunks_and_line_endings
    parser = Sessionary::Stream::Parser.new
    frames = []
    ["id: 7\r", "\nevent: appended\r\ndata: {\"author\":", "\"ü\"}\n", ": heartbeat\n\n",
     "data: [1,\rdata: 2]\r\r", "\n"].each { |chunk| parser.feed(chunk.b) { |frame| frames << frame } }
    assert_equal [[7, "appended", {"author" => "ü"}], [nil, "message", [1, 2]]],
                 frames.map { |frame| [frame.id, frame.event, frame.data.is_a?(Sessionary::Record) ? frame.data.to_h : frame.data] }
  end

  def test_a_stream_ended_early_is_opened_again_after_the_last_event
    # The first connection ends after seq 1, as a proxy's time limit would end it.
    api.on("GET", STREAM) do |_request, n|
      body = n == 1 ? frame("appended", 1, StubAPI.event(1)) : frame("closed", 2, {"version" => 2, "outcome" => "completed"})
      [200, ": heartbeat\n\n#{body}", {"Content-Type" => "text/event-stream"}]
    end
    frames = sessionary.stream_events("app", "ada", "s1", after_seq: 0).map { |change| [change.id, change.event] }
    assert_equal [[1, "appended"], [2, "closed"]], frames
    assert_equal %w[0 1], api.requests.map { |request| request.headers["last-event-id"] }
    assert_equal ["text/event-stream"], api.requests.map { |request| request.headers["accept"] }.uniq
  end

  def test_a_stream_from_now_sends_no_last_event_id
    api.on("GET", STREAM, 200, frame("closed", 1, {"version" => 1, "outcome" => "failed"}),
           {"Content-Type" => "text/event-stream"})
    assert_equal ["failed"], sessionary.stream_events("app", "ada", "s1").map { |change| change.data.outcome }
    refute api.requests.first.headers.key?("last-event-id")
  end

  def test_the_stream_of_a_missing_session_raises_at_once
    api.on("GET", STREAM, 404, StubAPI.problem(404, "session_not_found"))
    assert_raises(Sessionary::SessionNotFoundError) { sessionary.stream_events("app", "ada", "s1").first }
    assert_equal 1, api.requests.size
  end
end
