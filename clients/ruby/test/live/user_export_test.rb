# frozen_string_literal: true

require "json"
require "live_helper"
require "tempfile"

# A user's export and its import under another user, against a server that runs with keys off.
# Each test works in an app of its own.
class UserExportTest < Minitest::Test
  include Helpers

  COUNTS = {"sessions" => 1, "events" => 1, "memories" => 1, "artifactVersions" => 0}.freeze
  NOTHING = COUNTS.transform_values { 0 }.freeze

  def setup
    @sessionary = client
    @app = unique("ruby-user-export")
  end

  def test_a_user_exported_is_imported_under_another
    event = {id: "e1", author: "user", invocationId: "inv-1", timestamp: 1.0}
    @sessionary.create_session(@app, "ada", session_id: "chat", events: [event])
    @sessionary.create_memory(@app, "ada", text: "Ada takes her tea black.", memory_id: "tea")
    @sessionary.update_user_state(@app, "ada", {units: "metric"})

    # Streamed to a file as it arrives, then from the file into the import.
    Tempfile.create("export", binmode: true) do |file|
      assert_nil @sessionary.export_user(@app, "ada", to: file)
      file.rewind
      imported = @sessionary.import_user(@app, "bob", file)
      assert_equal({"created" => COUNTS, "unchanged" => NOTHING, "userStateKeys" => 1}, imported.to_h)
      assert_equal 1, imported.created.sessions
    end

    session = @sessionary.get_session(@app, "bob", "chat")
    assert_equal ["bob", ["e1"]], [session.user_id, session.events.map(&:id)]
    assert_equal "Ada takes her tea black.", @sessionary.get_memory(@app, "bob", "tea").text
    assert_equal({"units" => "metric"}, @sessionary.user_state(@app, "bob").to_h)

    # Whole, it is NDJSON; the same export again creates nothing.
    ndjson = @sessionary.export_user(@app, "ada")
    formats = ndjson.each_line.map { |line| JSON.parse(line)["format"] }
    assert_equal ["sessionary.userState.v1", "sessionary.session.v1", nil, "sessionary.memory.v1"], formats
    again = @sessionary.import_user(@app, "bob", ndjson)
    assert_equal({"created" => NOTHING, "unchanged" => COUNTS, "userStateKeys" => 1}, again.to_h)
    chunks = []
    @sessionary.export_user(@app, "ada") { |chunk| chunks << chunk }
    assert_equal ndjson, chunks.join.force_encoding(Encoding::UTF_8)
    assert_equal "", @sessionary.export_user(@app, "nobody")

    # The same session id, different (an event more): nothing is imported.
    @sessionary.append_event(@app, "ada", "chat", {author: "user", content: text("More.")})
    assert_raises(Sessionary::SessionAlreadyExistsError) do
      @sessionary.import_user(@app, "bob", @sessionary.export_user(@app, "ada"))
    end
  end
end
