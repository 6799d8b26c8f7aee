# frozen_string_literal: true

require "base64"
require "digest"
require "stringio"
require "tempfile"
require "live_helper"

# The artifact methods against the live server, in a session and in its user's own names.
class ArtifactsTest < Minitest::Test
  include Helpers

  MIB = 1 << 20

  def setup
    @sessionary = client
  end

  def teardown
    @sessionary.close
  end

  def test_artifacts_are_uploaded_listed_read_by_version_downloaded_and_deleted_in_a_session_and_its_users
    user = unique("u")
    chat = new_session(user: user)
    csv = "city,rain\nBergen,9\n"
    first = chat.upload_artifact("reports/q1.csv", csv, mime_type: "text/csv", display_name: "Q1",
                                 custom_metadata: {"source" => "Zoë ☂", "rows" => 1})
    assert_equal ["reports/q1.csv", 0, "text/csv", "bytes", csv.bytesize, Digest::SHA256.hexdigest(csv), "Q1"],
                 [first.name, first.version, first.mime_type, first.kind, first.size, first.sha256, first.display_name]
    assert_equal({"source" => "Zoë ☂", "rows" => 1}, first.custom_metadata.to_h)
    assert_equal "artifact://apps/#{APP}/users/#{user}/sessions/#{chat.session_id}/artifacts/reports/q1.csv/versions/0",
                 first.canonical_uri
    bytes = "\x00\x01\xFE\xFF".b
    second = chat.upload_artifact("reports/q1.csv", bytes)
    assert_equal [1, "application/octet-stream"], [second.version, second.mime_type]
    # Without a session: the user's own names, which every session of the user sees.
    avatar = @sessionary.upload_artifact(APP, user, nil, "user:avatar.png", bytes, mime_type: "image/png")
    assert_equal "artifact://apps/#{APP}/users/#{user}/artifacts/user:avatar.png/versions/0", avatar.canonical_uri
    assert_raises(Sessionary::InvalidRequestError) { @sessionary.upload_artifact(APP, user, nil, "notes.txt", "x") }

    assert_equal %w[reports/q1.csv user:avatar.png], chat.list_artifacts.artifacts.map(&:name)
    assert_equal %w[user:avatar.png], @sessionary.list_artifacts(APP, user, nil).artifacts.map(&:name)
    page = chat.list_artifacts(page_size: 1)
    assert_equal [%w[reports/q1.csv], String], [page.artifacts.map(&:name), page.next_page_token.class]
    assert_equal [["reports/q1.csv", 1], ["user:avatar.png", 0]], chat.artifacts(page_size: 1).map { |a| [a.name, a.version] }
    assert_equal %w[user:avatar.png], @sessionary.artifacts(APP, user, nil).map(&:name)

    versions = chat.list_artifact_versions("reports/q1.csv", page_size: 1)
    assert_equal [[0], String], [versions.versions.map(&:version), versions.next_page_token.class]
    assert_equal [first, second], chat.artifact_versions("reports/q1.csv", page_size: 1).to_a
    assert_equal [avatar], @sessionary.artifact_versions(APP, user, nil, "user:avatar.png").to_a
    assert_equal second, chat.artifact_version("reports/q1.csv")
    assert_equal first, chat.artifact_version("reports/q1.csv", version: 0)
    assert_equal avatar, @sessionary.artifact_version(APP, user, nil, "user:avatar.png")

    newest = chat.download_artifact("reports/q1.csv")
    assert_equal [bytes, 1, "application/octet-stream", second.sha256, bytes.bytesize, nil, nil],
                 [newest.data, newest.version, newest.mime_type, newest.sha256, newest.size, newest.range, newest.file_uri]
    assert_equal [csv, 0, "text/csv"], chat.download_artifact("reports/q1.csv", version: 0).then { |c| [c.data, c.version, c.mime_type] }
    assert_equal bytes, @sessionary.download_artifact(APP, user, nil, "user:avatar.png").data
    assert_equal bytes, chat.download_artifact("user:avatar.png").data # through the session too

    chat.delete_artifact("reports/q1.csv")
    [-> { chat.artifact_version("reports/q1.csv") }, -> { chat.download_artifact("reports/q1.csv") },
     -> { chat.list_artifact_versions("reports/q1.csv") }, -> { chat.delete_artifact("reports/q1.csv") }].each do |gone|
      error = assert_raises(Sessionary::ArtifactNotFoundError) { gone.call }
      assert_equal [404, "artifact_not_found"], [error.status, error.code]
    end
    assert_equal 0, chat.upload_artifact("reports/q1.csv", csv).version # a name saved again starts at 0
    @sessionary.delete_artifact(APP, user, nil, "user:avatar.png")
    assert_empty @sessionary.list_artifacts(APP, user, nil).artifacts
  end

  def test_adks_json_form_saves_bytes_text_and_references
    user = unique("u")
    chat = new_session(user: user)
    image = "\x89PNG".b
    inline = chat.save_artifact("logo.png", {inlineData: {data: Base64.strict_encode64(image), mimeType: "image/png"}},
                                custom_metadata: {"by" => "designer"})
    assert_equal ["bytes", "image/png", {"by" => "designer"}], [inline.kind, inline.mime_type, inline.custom_metadata.to_h]
    assert_equal image, chat.download_artifact("logo.png").data
    text = chat.save_artifact("notes.md", {text: "# Bergen ☂"})
    assert_equal %w[text text/plain], [text.kind, text.mime_type]
    notes = chat.download_artifact("notes.md")
    assert_equal ["# Bergen ☂", Encoding::UTF_8, "text/plain; charset=utf-8"], [notes.data, notes.data.encoding, notes.mime_type]

    uri = "https://example.com/forecast.pdf"
    reference = @sessionary.save_artifact(APP, user, nil, "user:forecast", {fileData: {fileUri: uri}})
    assert_equal ["reference", uri, nil], [reference.kind, reference.file_uri, reference.sha256]
    downloaded = chat.download_artifact("user:forecast")
    assert downloaded.reference?
    assert_equal [nil, 0, uri], [downloaded.data, downloaded.version, downloaded.file_uri]
    # An `artifact://` reference the server follows: its content downloads.
    chat.save_artifact("logo-again.png", {fileData: {fileUri: inline.canonical_uri}})
    assert_equal image, chat.download_artifact("logo-again.png").data
  end

  def test_a_range_downloads_those_bytes_and_one_past_the_end_is_its_own_error
    chat = new_session
    chat.upload_artifact("digits.txt", "0123456789")
    part = chat.download_artifact("digits.txt", range: 2..5)
    assert_equal ["2345", 2..5, 10], [part.data, part.range, part.size]
    assert_equal %w[789 789 234], [7.., -3.., 2...5].map { |range| chat.download_artifact("digits.txt", range: range).data }
    error = assert_raises(Sessionary::RangeNotSatisfiableError) { chat.download_artifact("digits.txt", range: 10..) }
    assert_equal [416, "range_not_satisfiable", 10], [error.status, error.code, error.size]
  end

  def test_megabytes_are_streamed_up_from_an_io_and_down_to_one
    chat = new_session
    content = Random.new(7).bytes(12 * MIB + 5)
    # From a pipe: no length known, so sent chunked, read as it is sent.
    reader, writer = IO.pipe
    feeding = Thread.new do
      (0...content.bytesize).step(256 * 1024) { |at| writer.write(content.byteslice(at, 256 * 1024)) }
      writer.close
    end
    big = chat.upload_artifact("big.bin", reader, request_options: {timeout: 60})
    feeding.join
    assert_equal [content.bytesize, Digest::SHA256.hexdigest(content)], [big.size, big.sha256]

    # Down to a file, chunk by chunk; to a block; a range across the server's 1 MiB chunks.
    Tempfile.create("download", binmode: true) do |file|
      written = chat.download_artifact("big.bin", to: file)
      assert_nil written.data
      assert_equal [big.sha256, content.bytesize], [written.sha256, written.size]
      file.flush
      assert_equal big.sha256, Digest::SHA256.file(file.path).hexdigest
    end
    chunks = 0
    digest = Digest::SHA256.new
    chat.download_artifact("big.bin") do |chunk|
      chunks += 1
      digest << chunk
    end
    assert_equal big.sha256, digest.hexdigest
    assert_operator chunks, :>, 1
    across = chat.download_artifact("big.bin", range: (MIB - 10)..(MIB + 9))
    assert_equal content.byteslice(MIB - 10, 20), across.data

    # From a file, which knows its length; from a StringIO.
    Tempfile.create("upload", binmode: true) do |file|
      file.write(content.byteslice(0, 5 * MIB))
      file.rewind
      assert_equal Digest::SHA256.hexdigest(content.byteslice(0, 5 * MIB)), chat.upload_artifact("file.bin", file).sha256
    end
    assert_equal 3, chat.upload_artifact("small.bin", StringIO.new("abc")).size
  ensure
    reader&.close
  end

  def test_an_append_says_whether_it_stored_the_event_found_it_stored_or_acknowledged_a_partial_one
    chat = new_session
    event = {id: "e1", author: "user", content: text("Oslo?")}
    stored = chat.append_event_outcome(event)
    assert_equal [:stored, 1, "e1"], [stored.outcome, stored.event.seq, stored.event.id]
    assert stored.stored?
    replayed = chat.append_event_outcome(event, if_match: 0) # sent again, as after a lost answer
    assert_equal [:replayed, 1], [replayed.outcome, replayed.event.seq]
    assert replayed.replayed?
    partial = @sessionary.append_event_outcome(APP, "ada", chat.session_id, {author: "agent", partial: true})
    assert_equal [:acknowledged, nil], [partial.outcome, partial.event["seq"]]
    assert partial.acknowledged?
    assert_equal 1, chat.get.version
  end
end
