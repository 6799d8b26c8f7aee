# frozen_string_literal: true

require "socket"
require "stringio"
require "tempfile"
require "test_helper"

# Artifacts as the client sends and reads them: uploads as bytes or streamed from an IO, their
# metadata as a header; downloads whole, to an IO or to a block, in ranges, a reference's URI;
# and their errors.
class ArtifactsTest < Minitest::Test
  include Stubbed

  ARTIFACTS = "/apps/app/users/ada/sessions/s1/artifacts"
  REPORT = "#{ARTIFACTS}/reports/q1.bin".freeze
  BYTES = "\x00\x01\xFE\xFF".b.freeze

  def record(name = "reports/q1.bin", size: BYTES.bytesize)
    {"name" => name, "version" => 0, "canonicalUri" => "artifact://apps/app/users/ada/sessions/s1/artifacts/#{name}/versions/0",
     "customMetadata" => {}, "createTime" => 1_795_000_000.5, "mimeType" => "application/octet-stream", "kind" => "bytes",
     "size" => size, "sha256" => "ab", "displayName" => nil, "fileUri" => nil}
  end

  def content(body, **headers)
    [200, body, {"Content-Type" => "application/octet-stream", "ETag" => '"ab"', "Artifact-Version" => "0"}.merge(headers)]
  end

  def test_bytes_are_uploaded_as_they_are_with_their_type_and_metadata
    api.on("POST", REPORT, 201, record)
    sessionary.upload_artifact("app", "ada", "s1", "reports/q1.bin", BYTES, custom_metadata: {"by" => "Zoë ☂", "n" => 1})
    sent = api.requests.last
    assert_equal BYTES, sent.body # bytes that are not UTF-8 are data here, not refused
    assert_equal ["application/octet-stream", "4"], sent.headers.values_at("content-type", "content-length")
    # A header's bytes are not UTF-8: JSON, every other character escaped.
    assert_equal '{"by":"Zo\u00eb \u2602","n":1}', sent.headers["artifact-metadata"]
    assert_equal({"by" => "Zoë ☂", "n" => 1}, JSON.parse(sent.headers["artifact-metadata"]))
    error = assert_raises(Sessionary::InvalidRequestError) do
      sessionary.upload_artifact("app", "ada", "s1", "reports/q1.bin", BYTES, custom_metadata: {"by" => "\xFF"})
    end
    assert_match(/\Aheader\.Artifact-Metadata: strings must be valid UTF-8 \(not sent\)\z/, error.detail)
    assert_equal 1, api.requests.size
  end

  def test_an_io_is_streamed_from_where_it_is_with_its_length_when_it_knows_it
    api.on("POST", REPORT, 201, record)
    file = Tempfile.create("artifact")
    file.write("skip:#{'x' * 100_000}")
    file.rewind
    file.read(5) # sent from here
    sessionary.upload_artifact("app", "ada", "s1", "reports/q1.bin", file, mime_type: "text/plain")
    sent = api.requests.last
    assert_equal ["x" * 100_000, "100000", "text/plain"], [sent.body, *sent.headers.values_at("content-length", "content-type")]

    reader, writer = IO.pipe
    Thread.new do
      3.times { |n| writer.write(n.to_s * 70_000) }
      writer.close
    end
    sessionary.upload_artifact("app", "ada", "s1", "reports/q1.bin", reader)
    sent = api.requests.last
    assert_equal ["0" * 70_000 + "1" * 70_000 + "2" * 70_000, "chunked", nil],
                 [sent.body, *sent.headers.values_at("transfer-encoding", "content-length")]
  ensure
    file&.close
    reader&.close
  end

  def test_an_upload_is_sent_again_from_where_it_began_only_when_it_can_be
    io = StringIO.new("head:body")
    io.read(5)
    upload = Sessionary::Transport::Upload.new(io)
    assert upload.replayable?
    2.times do
      request = Net::HTTP::Post.new("/")
      upload.attach(request)
      assert_equal ["body", 4], [request.body_stream.read, request.content_length]
    end
    assert Sessionary::Transport::Upload.new("bytes").replayable?
    IO.pipe { |reader, _| refute Sessionary::Transport::Upload.new(reader).replayable? }
  end

  def test_a_pipe_is_sent_once_even_to_a_refused_connection
    port = TCPServer.open("127.0.0.1", 0) { |server| server.addr[1] } # free once closed
    down = Sessionary::Client.new(base_url: "http://127.0.0.1:#{port}", backoff: 0.5)
    IO.pipe do |reader, writer|
      writer.close
      started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      assert_raises(Sessionary::APIConnectionError) { down.upload_artifact("app", "ada", "s1", "p", reader) }
      # Bytes would be sent again after a backoff of up to 0.5 s, then 1 s.
      assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - started, :<, 0.4
    end
  end

  def test_a_download_is_read_whole_to_an_io_or_to_a_block
    api.on("GET", REPORT) { content(BYTES) }
    whole = sessionary.download_artifact("app", "ada", "s1", "reports/q1.bin")
    assert_equal [BYTES, Encoding::BINARY, 0, "ab", 4, nil], [whole.data, whole.data.encoding, whole.version, whole.sha256,
                                                               whole.size, whole.range]
    refute whole.reference?
    assert_equal "*/*", api.requests.last.headers["accept"]
    out = StringIO.new(String.new(encoding: Encoding::BINARY))
    assert_nil sessionary.download_artifact("app", "ada", "s1", "reports/q1.bin", to: out).data
    assert_equal BYTES, out.string
    chunks = []
    sessionary.download_artifact("app", "ada", "s1", "reports/q1.bin") { |chunk| chunks << chunk }
    assert_equal BYTES, chunks.join
  end

  def test_text_is_read_as_utf8
    api.on("GET", "#{ARTIFACTS}/notes.md") { content("# Bergen ☂".b, "Content-Type" => "text/plain; charset=utf-8") }
    notes = sessionary.download_artifact("app", "ada", "s1", "notes.md")
    assert_equal ["# Bergen ☂", Encoding::UTF_8], [notes.data, notes.data.encoding]
  end

  def test_a_range_is_asked_for_as_a_range_of_ruby_and_read_back_as_one
    api.on("GET", REPORT) { content(BYTES[1, 2], "Content-Range" => "bytes 1-2/4") }
    part = sessionary.download_artifact("app", "ada", "s1", "reports/q1.bin", range: 1..2)
    assert_equal [BYTES[1, 2], 1..2, 4], [part.data, part.range, part.size]
    [1...3, 1.., -2..].each { |range| sessionary.download_artifact("app", "ada", "s1", "reports/q1.bin", range: range) }
    assert_equal ["bytes=1-2", "bytes=1-2", "bytes=1-", "bytes=-2"], api.requests.map { |request| request.headers["range"] }
    [-2..-1, "bytes=0-1", 1.5..2].each do |range|
      assert_raises(ArgumentError) { sessionary.download_artifact("app", "ada", "s1", "reports/q1.bin", range: range) }
    end
    assert_equal 4, api.requests.size
  end

  def test_a_reference_downloads_as_its_uri
    api.on("GET", "/apps/app/users/ada/artifacts/user%3Aforecast", 303, "",
           {"Location" => "https://example.com/forecast.pdf", "Artifact-Version" => "2"})
    reference = sessionary.download_artifact("app", "ada", nil, "user:forecast")
    assert reference.reference?
    assert_equal [nil, 2, "https://example.com/forecast.pdf"], [reference.data, reference.version, reference.file_uri]
  end

  def test_a_missing_artifact_and_a_range_past_the_end_are_their_own_errors
    api.on("GET", "#{ARTIFACTS}/gone", 404, StubAPI.problem(404, "artifact_not_found"))
    api.on("GET", REPORT, 416, StubAPI.problem(416, "range_not_satisfiable"), {"Content-Range" => "bytes */4"})
    error = assert_raises(Sessionary::ArtifactNotFoundError) { sessionary.download_artifact("app", "ada", "s1", "gone") }
    assert_kind_of Sessionary::NotFoundError, error
    error = assert_raises(Sessionary::RangeNotSatisfiableError) do
      sessionary.download_artifact("app", "ada", "s1", "reports/q1.bin", range: 9..)
    end
    assert_equal [416, "range_not_satisfiable", 4], [error.status, error.code, error.size]
  end

  def test_a_names_segments_are_encoded_each_and_a_dot_one_reaches_the_server_as_one
    api.on("GET", "#{ARTIFACTS}/a%20b/c%3F/versions/3", 200, record("a b/c?"))
    assert_equal "a b/c?", sessionary.artifact_version("app", "ada", "s1", "a b/c?", version: 3).name
    problem = StubAPI.problem(422, "validation_error", "Path segments must not be `.` or `..`.", errors: [])
    api.on("GET", "#{ARTIFACTS}/a/%2E%2E/b/versions/latest", 422, problem)
    assert_raises(Sessionary::InvalidRequestError) { sessionary.artifact_version("app", "ada", "s1", "a/../b") }
  end

  def test_leaving_a_downloads_block_closes_its_connection
    api.on("GET", REPORT) { content(BYTES) }
    sessionary.download_artifact("app", "ada", "s1", "reports/q1.bin") { break }
    sessionary.download_artifact("app", "ada", "s1", "reports/q1.bin")
    assert_equal 2, api.connections # the first, left mid-answer, was not reused
  end

  def test_a_download_cut_short_is_a_connection_error_and_not_resent_once_a_chunk_was_given
    # A server whose answers stop after 10 of their 100 bytes.
    server = TCPServer.new("127.0.0.1", 0)
    served = 0
    serving = Thread.new do
      loop do
        socket = server.accept
        served += 1
        socket.gets("\r\n\r\n")
        socket.write("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: 100\r\n\r\n#{'x' * 10}")
        socket.close
      end
    end
    cut = Sessionary::Client.new(base_url: "http://127.0.0.1:#{server.addr[1]}", backoff: 0.001)
    given = +""
    error = assert_raises(Sessionary::APIConnectionError) { cut.download_artifact("app", "ada", "s1", "big") { |chunk| given << chunk } }
    assert_kind_of EOFError, error.cause
    assert_equal ["x" * 10, 1], [given, served]
    assert_raises(Sessionary::APIConnectionError) { cut.download_artifact("app", "ada", "s1", "big") }
    assert_equal 2, served, "held by the client, not the caller, yet not resent: a chunk was read"
  ensure
    serving&.kill
    cut&.close
    server&.close
  end

  def test_an_error_of_the_callers_own_io_is_raised_as_it_is
    api.on("GET", REPORT) { content(BYTES) }
    closed = StringIO.new.tap(&:close)
    assert_raises(IOError) { sessionary.download_artifact("app", "ada", "s1", "reports/q1.bin", to: closed) }
    assert_equal 1, api.requests.size
  end
end
