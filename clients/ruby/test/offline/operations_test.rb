# frozen_string_literal: true

require "digest"
require "test_helper"

# Every method of the client against the stub of the API: the request it sends (method, path,
# query, body) and what it makes of the answer. One test per method, from the table below,
# which must name every public method of the client.
class OperationsTest < Minitest::Test
  include Stubbed

  OPERATIONS = []
  SESSIONS = "/apps/app/users/ada/sessions"
  SESSION = "#{SESSIONS}/s1"
  TIME = 1_795_000_001.5
  A_SESSION = StubAPI.session("s1")
  A_FORK = StubAPI.session("f1", kind: "fork", parent: {"sessionId" => "s1", "seq" => 2, "functionCallId" => nil})
  AN_EVENT = StubAPI.event(1)
  A_PAGE = {"sessions" => [A_SESSION], "nextPageToken" => nil}.freeze
  EVENTS = {"events" => [AN_EVENT], "nextPageToken" => nil}.freeze
  TRIMMED = {"removedEvents" => 2, "keptEvents" => 1, "version" => 4}.freeze
  A_CALL = {"id" => "call-1", "name" => "lookup", "eventId" => "e1", "seq" => 1, "timestamp" => TIME,
            "status" => "pending", "deadline" => nil, "longRunning" => false}.freeze
  A_HIT = {"userId" => "ada", "sessionId" => "s1", "seq" => 1, "eventId" => "e1", "author" => "user",
           "timestamp" => TIME, "rank" => 0.5, "snippet" => "a [refund] order"}.freeze
  COMPACTION = {"startTimestamp" => TIME, "endTimestamp" => TIME,
                "compactedContent" => {"role" => "model", "parts" => [{"text" => "They talked."}]}}.freeze
  TOKENS = {"promptTokenCount" => 5, "candidatesTokenCount" => 2, "totalTokenCount" => 7, "events" => 1}.freeze
  EXPORT = "#{JSON.generate(A_SESSION.except('events').merge('format' => 'sessionary.session.v1'))}\n" \
           "#{JSON.generate(AN_EVENT)}\n"
  STREAM = {"Content-Type" => "text/event-stream"}.freeze

  # The test of `name`: `call` sends `verb path` with `query` and `body` (nil: none) and,
  # answered `status` and `answer` (`headers` besides), returns `result` as plain JSON
  # (records as Hashes, lists and Enumerators as Arrays).
  def self.operation(name, verb, path, query: {}, body: nil, status: 200, answer: {}, headers: {}, result: answer,
                     &call)
    OPERATIONS << name
    define_method("test_#{name}") do
      api.on(verb, path, status, answer, headers)
      returned = plain(call.call(sessionary))
      request = api.requests.last
      assert_equal [verb, path, query], [request.method, request.path, request.query]
      if body.nil? then assert_empty request.body
      elsif body.is_a?(String) then assert_equal body, request.body
      else assert_equal body, request.json
      end
      result.nil? ? assert_nil(returned) : assert_equal(result, returned)
    end
  end

  # A stream's body: each frame's `event:`, `id:` (if any) and `data:`.
  def self.frames(*frames)
    frames.map { |event, id, data| "event: #{event}\n#{id && "id: #{id}\n"}data: #{JSON.generate(data)}\n\n" }.join
  end

  # --- Sessions ---------------------------------------------------------------------------

  operation :create_session, "POST", SESSIONS, status: 201, answer: A_SESSION,
            body: {"sessionId" => "s1", "state" => {"k" => 1}, "displayName" => "Trip", "labels" => {"team" => "a"},
                   "ttl" => 60, "events" => [{"id" => "e1", "author" => "user"}]} do |c|
    c.create_session("app", "ada", session_id: "s1", state: {"k" => 1}, display_name: "Trip",
                     labels: {"team" => "a"}, ttl: 60, events: [{id: "e1", author: "user"}])
  end
  operation :get_session, "GET", SESSION, answer: A_SESSION,
            query: {"numRecentEvents" => "1", "untilSeq" => "3"} do |c|
    c.get_session("app", "ada", "s1", num_recent_events: 1, until_seq: 3)
  end
  operation :list_sessions, "GET", SESSIONS, answer: A_PAGE,
            query: {"pageSize" => "2", "order" => "desc", "label" => ["team:a", "n:1"], "displayName" => "Trip"} do |c|
    c.list_sessions("app", "ada", page_size: 2, order: "desc", labels: {"team" => "a", "n" => "1"}, display_name: "Trip")
  end
  operation :sessions, "GET", SESSIONS, query: {"pageSize" => "2"}, answer: A_PAGE, result: [A_SESSION] do |c|
    c.sessions("app", "ada", page_size: 2)
  end
  operation :list_app_sessions, "GET", "/apps/app/sessions", query: {"label" => "team:a"}, answer: A_PAGE do |c|
    c.list_app_sessions("app", labels: {"team" => "a"})
  end
  operation :app_sessions, "GET", "/apps/app/sessions", answer: A_PAGE, result: [A_SESSION] do |c|
    c.app_sessions("app")
  end
  # nil clears the display name (sent as null); what is not given is not sent.
  operation :update_session, "PATCH", SESSION, answer: A_SESSION,
            body: {"stateDelta" => {"k" => 2}, "labels" => {}, "displayName" => nil} do |c|
    c.update_session("app", "ada", "s1", state_delta: {"k" => 2}, display_name: nil, labels: {})
  end
  operation :update_state, "PATCH", SESSION, body: {"stateDelta" => {"k" => 2}}, answer: A_SESSION do |c|
    c.update_state("app", "ada", "s1", {"k" => 2})
  end
  operation :delete_session, "DELETE", SESSION, status: 204, answer: nil do |c|
    c.delete_session("app", "ada", "s1")
  end

  # --- Events -----------------------------------------------------------------------------

  operation :append_event, "POST", "#{SESSION}/events", status: 201, answer: AN_EVENT,
            body: {"id" => "e1", "author" => "user"} do |c|
    c.append_event("app", "ada", "s1", {id: "e1", author: "user"})
  end
  # A resend of a stored event: the server's 200, nothing written.
  operation :append_event_outcome, "POST", "#{SESSION}/events", answer: AN_EVENT,
            body: {"id" => "e1", "author" => "user"}, result: {event: AN_EVENT, outcome: :replayed} do |c|
    c.append_event_outcome("app", "ada", "s1", {id: "e1", author: "user"})
  end
  operation :append_events, "POST", "#{SESSION}/events:batch", status: 201, answer: {"events" => [AN_EVENT]},
            body: {"events" => [{"id" => "e1", "author" => "user"}]}, result: [AN_EVENT] do |c|
    c.append_events("app", "ada", "s1", [{"id" => "e1", "author" => "user"}])
  end
  operation :list_events, "GET", "#{SESSION}/events", answer: EVENTS,
            query: {"pageSize" => "1", "afterSeq" => "0", "order" => "asc"} do |c|
    c.list_events("app", "ada", "s1", page_size: 1, after_seq: 0, order: "asc")
  end
  operation :events, "GET", "#{SESSION}/events", answer: EVENTS, result: [AN_EVENT],
            query: {"beforeTimestamp" => "1795000002.0"} do |c|
    c.events("app", "ada", "s1", before_timestamp: 1_795_000_002.0)
  end
  operation :count_events, "GET", "#{SESSION}/events:count",
            answer: {"count" => 1, "firstSeq" => 1, "lastSeq" => 1} do |c|
    c.count_events("app", "ada", "s1")
  end
  operation :remove_event, "DELETE", "#{SESSION}/events/e1",
            answer: {"removedEventIds" => ["e1"], "version" => 2} do |c|
    c.remove_event("app", "ada", "s1", "e1")
  end
  operation :rewrite_event, "PATCH", "#{SESSION}/events/e1", answer: AN_EVENT,
            body: {"content" => {"parts" => [{"text" => "[redacted]"}]}} do |c|
    c.rewrite_event("app", "ada", "s1", "e1", {parts: [{text: "[redacted]"}]})
  end

  # --- Streams ----------------------------------------------------------------------------

  CLOSED = {"version" => 2, "outcome" => "completed"}.freeze
  operation :stream_events, "GET", "#{SESSION}/events:stream", headers: STREAM,
            answer: frames(["appended", 1, AN_EVENT], ["closed", 2, CLOSED]),
            result: [{event: "appended", id: 1, data: AN_EVENT}, {event: "closed", id: 2, data: CLOSED}] do |c|
    c.stream_events("app", "ada", "s1")
  end
  CREATED = {"userId" => "ada", "sessionId" => "s1", "version" => 0, "kind" => "root", "parentId" => nil}.freeze
  operation :stream_sessions, "GET", "#{SESSIONS}:stream", headers: STREAM,
            answer: frames(["created", nil, CREATED]), result: [{event: "created", id: nil, data: CREATED}] do |c|
    c.stream_sessions("app", "ada").first(1)
  end
  operation :stream_app_sessions, "GET", "/apps/app/sessions:stream", headers: STREAM,
            answer: frames(["created", nil, CREATED]), result: [{event: "created", id: nil, data: CREATED}] do |c|
    c.stream_app_sessions("app").first(1)
  end

  # --- Lineage ----------------------------------------------------------------------------

  operation :fork_session, "POST", "#{SESSION}:fork", status: 201, answer: A_FORK,
            body: {"sessionId" => "f1", "atSeq" => 2} do |c|
    c.fork_session("app", "ada", "s1", session_id: "f1", at_seq: 2)
  end
  A_CHILD = StubAPI.session("c1", kind: "child", parent: {"sessionId" => "s1", "seq" => 1, "functionCallId" => "call-1"})
  operation :create_child_session, "POST", "#{SESSION}/children", status: 201, answer: A_CHILD,
            body: {"functionCallId" => "call-1", "inherit" => "context"} do |c|
    c.create_child_session("app", "ada", "s1", function_call_id: "call-1", inherit: "context")
  end
  operation :list_children, "GET", "#{SESSION}/children", query: {"pageSize" => "1"},
            answer: {"sessions" => [A_FORK], "nextPageToken" => nil} do |c|
    c.list_children("app", "ada", "s1", page_size: 1)
  end
  operation :children, "GET", "#{SESSION}/children", answer: {"sessions" => [A_FORK], "nextPageToken" => nil},
            result: [A_FORK] do |c|
    c.children("app", "ada", "s1")
  end
  operation :lineage, "GET", "#{SESSIONS}/f1/lineage", answer: {"sessions" => [A_SESSION]}, result: [A_SESSION] do |c|
    c.lineage("app", "ada", "f1")
  end
  operation :close_session, "POST", "#{SESSION}:close",
            body: {"outcome" => "completed", "result" => {"found" => 2}},
            answer: A_SESSION.merge("status" => "closed", "outcome" => "completed") do |c|
    c.close_session("app", "ada", "s1", "completed", result: {"found" => 2})
  end

  # --- History surgery, context, tool calls -----------------------------------------------

  operation :rewind_session, "POST", "#{SESSION}:rewind", body: {"beforeInvocationId" => "i2"}, status: 201,
            answer: StubAPI.event(3, actions: {"rewindBeforeInvocationId" => "i2"}) do |c|
    c.rewind_session("app", "ada", "s1", "i2")
  end
  operation :trim_session, "POST", "#{SESSION}:trim", body: {"keepLast" => 1}, answer: TRIMMED do |c|
    c.trim_session("app", "ada", "s1", 1)
  end
  operation :reset_session, "POST", "#{SESSION}:reset", body: {}, answer: TRIMMED do |c|
    c.reset_session("app", "ada", "s1")
  end
  operation :context, "GET", "#{SESSION}/context", query: {"tokenBudget" => "60"},
            answer: {"events" => [AN_EVENT], "estimatedTokens" => 12, "truncatedBeforeSeq" => nil,
                     "overBudget" => false} do |c|
    c.context("app", "ada", "s1", token_budget: 60)
  end
  operation :compact_session, "POST", "#{SESSION}:compact", status: 201,
            body: {"strategy" => "summary", "keepLast" => 0, "summary" => "They talked."},
            answer: StubAPI.event(2, actions: {"compaction" => COMPACTION}) do |c|
    c.compact_session("app", "ada", "s1", "summary", keep_last: 0, summary: "They talked.")
  end
  operation :tool_calls, "GET", "#{SESSION}/toolCalls", query: {"status" => "pending", "timeoutSeconds" => "0"},
            answer: {"toolCalls" => [A_CALL]}, result: [A_CALL] do |c|
    c.tool_calls("app", "ada", "s1", status: "pending", timeout_seconds: 0)
  end
  operation :heal_session, "POST", "#{SESSION}:heal", body: {"timeoutSeconds" => 0},
            answer: {"healed" => 1, "version" => 3} do |c|
    c.heal_session("app", "ada", "s1", timeout_seconds: 0)
  end

  # --- Pending input ----------------------------------------------------------------------

  A_QUEUED = {"id" => "q1", "author" => "user", "timestamp" => TIME}.freeze
  operation :queue_event, "POST", "#{SESSION}/pending", body: {"id" => "q1", "author" => "user"}, status: 202,
            answer: A_QUEUED do |c|
    c.queue_event("app", "ada", "s1", {id: "q1", author: "user"})
  end
  operation :pending, "GET", "#{SESSION}/pending", answer: {"events" => [A_QUEUED]}, result: [A_QUEUED] do |c|
    c.pending("app", "ada", "s1")
  end
  operation :clear_pending, "DELETE", "#{SESSION}/pending", status: 204, answer: nil do |c|
    c.clear_pending("app", "ada", "s1")
  end
  operation :promote_pending, "POST", "#{SESSION}/pending:promote", body: {"force" => true}, status: 201,
            answer: {"events" => [AN_EVENT]}, result: [AN_EVENT] do |c|
    c.promote_pending("app", "ada", "s1", force: true)
  end

  # --- Export and import ------------------------------------------------------------------

  operation :export_session, "GET", "#{SESSION}:export", answer: EXPORT,
            headers: {"Content-Type" => "application/x-ndjson"} do |c|
    c.export_session("app", "ada", "s1")
  end
  operation :import_session, "POST", "#{SESSIONS}:import", body: EXPORT, status: 201, answer: A_SESSION do |c|
    c.import_session("app", "ada", EXPORT)
  end
  USER_EXPORT = "#{JSON.generate({'format' => 'sessionary.userState.v1', 'appName' => 'app', 'userId' => 'ada',
                                   'state' => {'units' => 'metric'}})}\n#{EXPORT}"
  IMPORTED = {"created" => {"sessions" => 1, "events" => 1, "memories" => 0, "artifactVersions" => 0},
              "unchanged" => {"sessions" => 0, "events" => 0, "memories" => 0, "artifactVersions" => 0},
              "userStateKeys" => 1}.freeze
  operation :export_user, "GET", "/apps/app/users/ada:export", answer: USER_EXPORT,
            headers: {"Content-Type" => "application/x-ndjson"} do |c|
    c.export_user("app", "ada")
  end
  operation :import_user, "POST", "/apps/app/users/ada:import", body: USER_EXPORT, answer: IMPORTED do |c|
    c.import_user("app", "ada", USER_EXPORT)
  end

  # --- Artifacts: a session's, or (with a nil session id) its user's own ------------------

  ARTIFACTS = "#{SESSION}/artifacts"
  USER_ARTIFACTS = "/apps/app/users/ada/artifacts"
  CSV = "city,rain\nBergen,9\n"
  CSV_SHA256 = Digest::SHA256.hexdigest(CSV)
  # A version's record as the API answers it.
  def self.artifact(name, version = 0, session: "s1", **fields)
    scope = name.start_with?("user:") ? "" : "/sessions/#{session}"
    {"name" => name, "version" => version, "canonicalUri" => "artifact://apps/app/users/ada#{scope}/artifacts/#{name}/versions/#{version}",
     "customMetadata" => {}, "createTime" => TIME, "mimeType" => "text/csv", "kind" => "bytes", "size" => CSV.bytesize,
     "sha256" => CSV_SHA256, "displayName" => nil, "fileUri" => nil}.merge(fields.transform_keys(&:to_s))
  end
  REPORT = artifact("reports/q1.csv", displayName: "Q1", customMetadata: {"rows" => 1})
  AVATAR = artifact("user:avatar.png", mimeType: "image/png", size: 4, sha256: Digest::SHA256.hexdigest("\x89PNG"))

  operation :list_artifacts, "GET", ARTIFACTS, query: {"untilSeq" => "3", "pageSize" => "2"},
            answer: {"artifacts" => [REPORT, AVATAR], "nextPageToken" => nil} do |c|
    c.list_artifacts("app", "ada", "s1", until_seq: 3, page_size: 2)
  end
  operation :artifacts, "GET", USER_ARTIFACTS, query: {"pageSize" => "1"},
            answer: {"artifacts" => [AVATAR], "nextPageToken" => nil}, result: [AVATAR] do |c|
    c.artifacts("app", "ada", nil, page_size: 1)
  end
  operation :save_artifact, "POST", USER_ARTIFACTS, status: 201, answer: AVATAR,
            body: {"filename" => "user:avatar.png", "artifact" => {"inlineData" => {"data" => "iVBORw==", "mimeType" => "image/png"}},
                   "customMetadata" => {"by" => "ada"}} do |c|
    c.save_artifact("app", "ada", nil, "user:avatar.png", {inlineData: {data: "iVBORw==", mimeType: "image/png"}},
                    custom_metadata: {"by" => "ada"})
  end
  # Its name's `/` kept; its bytes sent as they are, not as JSON.
  operation :upload_artifact, "POST", "#{ARTIFACTS}/reports/q1.csv", query: {"displayName" => "Q1"}, body: CSV,
            status: 201, answer: REPORT do |c|
    c.upload_artifact("app", "ada", "s1", "reports/q1.csv", CSV, mime_type: "text/csv", display_name: "Q1",
                      custom_metadata: {"rows" => 1})
  end
  operation :download_artifact, "GET", "#{ARTIFACTS}/reports/q1.csv", query: {"version" => "0"}, answer: CSV,
            headers: {"Content-Type" => "text/csv", "ETag" => %("#{CSV_SHA256}"), "Artifact-Version" => "0"},
            result: {data: CSV, mime_type: "text/csv", version: 0, sha256: CSV_SHA256, range: nil, size: CSV.bytesize,
                     file_uri: nil} do |c|
    c.download_artifact("app", "ada", "s1", "reports/q1.csv", version: 0)
  end
  operation :list_artifact_versions, "GET", "#{USER_ARTIFACTS}/user%3Aavatar.png/versions", query: {"pageSize" => "1"},
            answer: {"versions" => [AVATAR], "nextPageToken" => nil} do |c|
    c.list_artifact_versions("app", "ada", nil, "user:avatar.png", page_size: 1)
  end
  operation :artifact_versions, "GET", "#{ARTIFACTS}/reports/q1.csv/versions",
            answer: {"versions" => [REPORT, artifact("reports/q1.csv", 1)], "nextPageToken" => nil},
            result: [REPORT, artifact("reports/q1.csv", 1)] do |c|
    c.artifact_versions("app", "ada", "s1", "reports/q1.csv")
  end
  operation :artifact_version, "GET", "#{ARTIFACTS}/reports/q1.csv/versions/latest", answer: REPORT do |c|
    c.artifact_version("app", "ada", "s1", "reports/q1.csv")
  end
  operation :delete_artifact, "DELETE", "#{USER_ARTIFACTS}/user%3Aavatar.png", status: 204, answer: nil do |c|
    c.delete_artifact("app", "ada", nil, "user:avatar.png")
  end

  # --- Memories: a user's, and the app's own ---------------------------------------------

  MEMORIES = "/apps/app/users/ada/memories"
  APP_MEMORIES = "/apps/app/memories"
  # A memory as the API answers it.
  def self.memory(id = "m1", user: "ada", revision: 1, **fields)
    {"id" => id, "scope" => user ? "user" : "app", "userId" => user, "kind" => "text", "revision" => revision,
     "text" => "I'm vegetarian.", "content" => {"role" => "user", "parts" => [{"text" => "I'm vegetarian."}]},
     "author" => nil, "metadata" => {}, "topics" => ["food"], "expireTime" => nil, "source" => nil,
     "timestamp" => TIME, "createTime" => TIME, "updateTime" => TIME, "embedded" => false}
      .merge(fields.transform_keys(&:to_s))
  end
  A_MEMORY = memory
  AN_APP_MEMORY = memory("hours", user: nil, text: "The shop opens at nine.", topics: [])
  MEMORY_PAGE = {"memories" => [A_MEMORY], "nextPageToken" => nil}.freeze
  REVISION = A_MEMORY.slice("revision", "text", "content", "author", "metadata", "topics", "expireTime", "createTime")
  REVISIONS = {"revisions" => [REVISION], "nextPageToken" => nil}.freeze
  RECALLED = {"memories" => [{"memory" => A_MEMORY, "score" => 1.0, "similarity" => 0.3, "wordScore" => nil}],
              "recalledBy" => "meaning+words", "note" => nil}.freeze
  ETAG = {"ETag" => '"1"'}.freeze

  # What is not given is not sent; `memory_id` is the body's `id`.
  operation :create_memory, "POST", MEMORIES, status: 201, answer: A_MEMORY, headers: ETAG,
            body: {"id" => "m1", "text" => "I'm vegetarian.", "topics" => ["food"], "metadata" => {"by" => "chef"},
                   "source" => {"sessionId" => "s1", "eventIds" => ["e1"]}, "ttl" => 60} do |c|
    c.create_memory("app", "ada", memory_id: "m1", text: "I'm vegetarian.", topics: ["food"], metadata: {"by" => "chef"},
                                  source: {sessionId: "s1", eventIds: ["e1"]}, ttl: 60)
  end
  operation :list_memories, "GET", MEMORIES, answer: MEMORY_PAGE,
            query: {"topic" => "food", "sessionId" => "s1", "kind" => "text", "pageSize" => "2"} do |c|
    c.list_memories("app", "ada", topic: "food", session_id: "s1", kind: "text", page_size: 2)
  end
  operation :memories, "GET", MEMORIES, query: {"kind" => "event"}, answer: MEMORY_PAGE, result: [A_MEMORY] do |c|
    c.memories("app", "ada", kind: "event")
  end
  operation :recall_memories, "POST", "#{MEMORIES}:recall", answer: RECALLED,
            body: {"query" => "what food do I like?", "limit" => 3, "minScore" => 0.1, "topics" => ["food"],
                   "includeApp" => false, "mode" => "meaning"} do |c|
    c.recall_memories("app", "ada", "what food do I like?", limit: 3, min_score: 0.1, topics: ["food"],
                                                            include_app: false, mode: "meaning")
  end
  operation :get_memory, "GET", "#{MEMORIES}/m1", answer: A_MEMORY, headers: ETAG do |c|
    c.get_memory("app", "ada", "m1")
  end
  # nil clears the author and the expiry (sent as null); what is not given is not sent.
  operation :update_memory, "PATCH", "#{MEMORIES}/m%201", answer: memory("m 1", revision: 2), headers: {"ETag" => '"2"'},
            body: {"text" => "I'm vegan.", "topics" => [], "author" => nil, "expireTime" => nil} do |c|
    c.update_memory("app", "ada", "m 1", text: "I'm vegan.", topics: [], author: nil, expire_time: nil, if_match: 1)
  end
  operation :delete_memory, "DELETE", "#{MEMORIES}/m1", status: 204, answer: nil do |c|
    c.delete_memory("app", "ada", "m1", if_match: '"1"')
  end
  operation :list_memory_revisions, "GET", "#{MEMORIES}/m1/revisions", query: {"pageSize" => "1"},
            answer: REVISIONS do |c|
    c.list_memory_revisions("app", "ada", "m1", page_size: 1)
  end
  operation :memory_revisions, "GET", "#{MEMORIES}/m1/revisions", answer: REVISIONS, result: [REVISION] do |c|
    c.memory_revisions("app", "ada", "m1")
  end
  operation :roll_back_memory, "POST", "#{MEMORIES}/m1:rollback", body: {"revision" => 1},
            answer: memory(revision: 3), headers: {"ETag" => '"3"'} do |c|
    c.roll_back_memory("app", "ada", "m1", 1, if_match: 2)
  end
  operation :create_app_memory, "POST", APP_MEMORIES, status: 201, answer: AN_APP_MEMORY, headers: ETAG,
            body: {"id" => "hours", "text" => "The shop opens at nine."} do |c|
    c.create_app_memory("app", memory_id: "hours", text: "The shop opens at nine.")
  end
  operation :list_app_memories, "GET", APP_MEMORIES, query: {"topic" => "hours"},
            answer: {"memories" => [AN_APP_MEMORY], "nextPageToken" => nil} do |c|
    c.list_app_memories("app", topic: "hours")
  end
  operation :app_memories, "GET", APP_MEMORIES, answer: {"memories" => [AN_APP_MEMORY], "nextPageToken" => nil},
            result: [AN_APP_MEMORY] do |c|
    c.app_memories("app")
  end
  operation :recall_app_memories, "POST", "#{APP_MEMORIES}:recall", body: {"query" => "opening hours", "mode" => "words"},
            answer: RECALLED.merge("memories" => [], "recalledBy" => "words") do |c|
    c.recall_app_memories("app", "opening hours", mode: "words")
  end
  operation :get_app_memory, "GET", "#{APP_MEMORIES}/hours", answer: AN_APP_MEMORY, headers: ETAG do |c|
    c.get_app_memory("app", "hours")
  end
  operation :update_app_memory, "PATCH", "#{APP_MEMORIES}/hours", body: {"metadata" => {"source" => "sign"}},
            answer: AN_APP_MEMORY.merge("revision" => 2) do |c|
    c.update_app_memory("app", "hours", metadata: {"source" => "sign"})
  end
  operation :delete_app_memory, "DELETE", "#{APP_MEMORIES}/hours", status: 204, answer: nil do |c|
    c.delete_app_memory("app", "hours")
  end
  operation :list_app_memory_revisions, "GET", "#{APP_MEMORIES}/hours/revisions", query: {"pageToken" => "t1"},
            answer: REVISIONS do |c|
    c.list_app_memory_revisions("app", "hours", page_token: "t1")
  end
  operation :app_memory_revisions, "GET", "#{APP_MEMORIES}/hours/revisions", answer: REVISIONS, result: [REVISION] do |c|
    c.app_memory_revisions("app", "hours")
  end
  operation :roll_back_app_memory, "POST", "#{APP_MEMORIES}/hours:rollback", body: {"revision" => 1},
            answer: AN_APP_MEMORY.merge("revision" => 3) do |c|
    c.roll_back_app_memory("app", "hours", 1)
  end
  operation :remember_session, "POST", "#{SESSION}:remember", body: {"eventIds" => ["e1"]},
            answer: {"remembered" => 1} do |c|
    c.remember_session("app", "ada", "s1", event_ids: ["e1"])
  end
  operation :embeddings_status, "GET", "/embeddings",
            answer: {"recall" => "meaning+words", "note" => nil, "pgvector" => "0.8.6", "provider" => "wordllama",
                     "model" => "wordllama/l2_supercat_256", "pending" => 0, "rate" => nil}, &:embeddings_status

  # --- Search, usage, browsing ------------------------------------------------------------

  operation :search, "GET", "/apps/app/search", query: {"q" => "refund order", "userId" => "ada", "pageSize" => "5"},
            answer: {"hits" => [A_HIT], "nextPageToken" => nil} do |c|
    c.search("app", "refund order", user_id: "ada", page_size: 5)
  end
  operation :search_hits, "GET", "/apps/app/search", query: {"q" => "refund"},
            answer: {"hits" => [A_HIT], "nextPageToken" => nil}, result: [A_HIT] do |c|
    c.search_hits("app", "refund")
  end
  operation :usage, "GET", "/apps/app/usage", query: {"userId" => "ada"},
            answer: {"users" => [TOKENS.merge("userId" => "ada")], "total" => TOKENS} do |c|
    c.usage("app", user_id: "ada")
  end
  APPS = {"apps" => [{"appName" => "app", "sessionCount" => 2, "lastUpdateTime" => TIME}], "nextPageToken" => nil}.freeze
  operation :list_apps, "GET", "/apps", query: {"pageSize" => "1"}, answer: APPS do |c|
    c.list_apps(page_size: 1)
  end
  operation :apps, "GET", "/apps", answer: APPS, result: APPS["apps"], &:apps
  USERS = {"users" => [{"userId" => "ada", "sessionCount" => 2, "lastUpdateTime" => TIME}], "nextPageToken" => nil}
          .freeze
  operation :list_users, "GET", "/apps/app/users", query: {"pageToken" => "t1"}, answer: USERS do |c|
    c.list_users("app", page_token: "t1")
  end
  operation :users, "GET", "/apps/app/users", answer: USERS, result: USERS["users"] do |c|
    c.users("app")
  end

  # --- App and user state, operations -----------------------------------------------------

  operation :app_state, "GET", "/apps/app/state", answer: {"state" => {"k" => 1}}, result: {"k" => 1} do |c|
    c.app_state("app")
  end
  operation :update_app_state, "PATCH", "/apps/app/state", body: {"stateDelta" => {"k" => 1}},
            answer: {"state" => {"k" => 1}}, result: {"k" => 1} do |c|
    c.update_app_state("app", {"k" => 1})
  end
  operation :user_state, "GET", "/apps/app/users/ada/state", answer: {"state" => {"units" => "metric"}},
            result: {"units" => "metric"} do |c|
    c.user_state("app", "ada")
  end
  operation :update_user_state, "PATCH", "/apps/app/users/ada/state", body: {"stateDelta" => {"units" => "metric"}},
            answer: {"state" => {"units" => "metric"}}, result: {"units" => "metric"} do |c|
    c.update_user_state("app", "ada", {"units" => "metric"})
  end
  ERASED = {"id" => "er1", "appName" => "app", "userId" => "ada", "status" => "done",
            "removed" => {"sessions" => 2, "events" => 5, "apiKeys" => 1}, "deletedKeyIds" => ["k2"],
            "createTime" => TIME, "updateTime" => TIME + 1, "finishTime" => TIME + 1}.freeze
  ERASING = ERASED.merge("status" => "running", "removed" => {"sessions" => 2, "events" => 0},
                         "finishTime" => nil).freeze
  operation :erase_user, "DELETE", "/apps/app/users/ada", answer: ERASED do |c|
    c.erase_user("app", "ada")
  end
  operation :get_erasure, "GET", "/apps/app/users/ada/erasure", answer: ERASING do |c|
    c.get_erasure("app", "ada")
  end
  APP_ERASED = ERASED.except("userId").merge("removed" => {"sessions" => 4, "appStates" => 1}).freeze
  operation :erase_app, "DELETE", "/apps/app", answer: APP_ERASED do |c|
    c.erase_app("app")
  end
  operation :get_app_erasure, "GET", "/apps/app/erasure", answer: APP_ERASED do |c|
    c.get_app_erasure("app")
  end
  A_RECORD = {"seq" => 7, "time" => TIME, "action" => "session.delete", "keyId" => "k1", "appName" => "app",
              "user" => "u-hash", "detail" => {"session" => "s-hash"}, "outcome" => "ok"}.freeze
  operation :list_audit_records, "GET", "/audit",
            query: {"app" => "app", "userId" => "ada", "action" => "session.delete", "afterTimestamp" => "1.5",
                    "pageSize" => "5"},
            answer: {"records" => [A_RECORD], "nextPageToken" => nil} do |c|
    c.list_audit_records(app_name: "app", user_id: "ada", action: "session.delete", after_timestamp: 1.5, page_size: 5)
  end
  operation :audit_records, "GET", "/audit", query: {"app" => "app"},
            answer: {"records" => [A_RECORD], "nextPageToken" => nil}, result: [A_RECORD] do |c|
    c.audit_records(app_name: "app")
  end
  KEY_SCOPE = {"authEnabled" => false, "keyId" => nil, "appName" => nil, "userId" => nil, "readOnly" => false,
               "writesAppState" => true}.freeze
  operation :key_scope, "GET", "/auth/key", answer: KEY_SCOPE, &:key_scope
  operation :health, "GET", "/healthz", answer: {"status" => "ok"}, &:health
  operation :readiness, "GET", "/readyz", answer: {"status" => "ready", "schemaRevision" => "0025", "recall" => "words"},
            &:readiness
  operation :metrics, "GET", "/metrics", answer: "# TYPE sessionary_requests_total counter\n",
            headers: {"Content-Type" => "text/plain; charset=utf-8"}, &:metrics

  def test_an_erase_still_running_is_answered_not_raised
    api.on("DELETE", "/apps/app/users/ada", 202, ERASING, {"Location" => "/apps/app/users/ada/erasure"})
    erasure = sessionary.erase_user("app", "ada")
    assert_equal ["running", 2, nil], [erasure.status, erasure.removed["sessions"], erasure.finish_time]
    assert_equal ERASING, erasure.to_h
  end

  def test_an_erasure_never_made_and_a_user_being_erased_are_their_own_errors
    api.on("GET", "/apps/app/users/bob/erasure", 404, StubAPI.problem(404, "erasure_not_found"))
    api.on("POST", "#{SESSION}/events", 409, StubAPI.problem(409, "user_erasing"))
    missing = assert_raises(Sessionary::ErasureNotFoundError) { sessionary.get_erasure("app", "bob") }
    assert_equal [404, "erasure_not_found"], [missing.status, missing.code]
    erasing = assert_raises(Sessionary::UserErasingError) { sessionary.append_event("app", "ada", "s1", {}) }
    assert_equal [409, "user_erasing"], [erasing.status, erasing.code]
  end

  def test_an_app_erase_still_running_is_answered_and_its_writes_raise_their_own_error
    running = APP_ERASED.merge("status" => "running", "finishTime" => nil)
    api.on("DELETE", "/apps/app", 202, running, {"Location" => "/apps/app/erasure"})
    api.on("PATCH", "/apps/app/state", 409, StubAPI.problem(409, "app_erasing"))
    assert_equal running, sessionary.erase_app("app").to_h
    erasing = assert_raises(Sessionary::AppErasingError) { sessionary.update_app_state("app", {"k" => 1}) }
    assert_equal [409, "app_erasing"], [erasing.status, erasing.code]
  end

  def test_the_table_names_every_method_of_the_client
    assert_equal (Sessionary::Client.public_instance_methods(false) - %i[session close]).sort, OPERATIONS.sort
  end

  private

  def plain(value)
    case value
    when Sessionary::Record then value.to_h
    when Struct then value.to_h.transform_values { |field| plain(field) } # a stream event, a download…
    when Array, Enumerator then value.map { |item| plain(item) }
    else value
    end
  end
end
