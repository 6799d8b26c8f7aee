# frozen_string_literal: true

require "json"
require "securerandom"

module Sessionary
  DEFAULT_URL = "http://127.0.0.1:8000"

  # Every Sessionary endpoint, one method each, with snake_case keyword arguments; answers are
  # Records (`session.app_name`, `session["appName"]`, `session.to_h`).
  #
  # `base_url` defaults to SESSIONARY_URL, else http://127.0.0.1:8000; `api_key` to
  # SESSIONARY_API_KEY. Error answers are raised as the APIError subclass their `code` names,
  # a request without an answer as APIConnectionError. `if_match:` takes a session's
  # `version` (a memory's `revision`), its ETag as read (`'"7"'`) or `"*"`.
  #
  # Every method takes `request_options: {timeout:, headers:, max_retries:}`, how that one call
  # is sent, over the client's.
  #
  # Resends: every request whose connection was refused; reads, appends (each event is given
  # an `id` if it has none, so a resend stores it once) and the other idempotent writes after
  # a lost answer, a timeout, a 429 or a 502-504, `retries` times with jittered backoff, or
  # after the wait the answer's Retry-After asks (at most a minute). After a write,
  # reads of that session and its events ask for the version it made (`minVersion`), so that a
  # server with a read replica answers them from the primary until the replica has caught up.
  # One client is safe to share between threads: each request takes a keep-alive connection of
  # its pool.
  class Client
    # The events after which nothing more can happen to a session: its stream ends.
    FINAL = %w[closed deleted].freeze
    # The last frame of a session's stream: `closed` or `deleted`.
    ENDS_SESSION = ->(frame) { FINAL.include?(frame.event) }
    # The last frame of a user's stream: `erased`, the user's or the whole app's (the server
    # ends the stream).
    ENDS_USER = ->(frame) { frame.event == "erased" }
    # The last frame of an app's stream: the app's `erased` (its `userId` nil); a user's is told
    # and the stream goes on.
    ENDS_APP = lambda do |frame|
      frame.event == "erased" && (!frame.data.is_a?(Record) || frame.data["userId"].nil?)
    end
    # The default of an argument whose nil means "clear it": left as the server has it.
    UNSET = Object.new.freeze
    # The path of the session a request is about (`/apps/…/users/…/sessions/{id}`), if any.
    SESSION = %r{\A/apps/[^/]+/users/[^/]+/sessions/[^/:]+}.freeze
    # The writes that make a session outside a session's path: a create, an import.
    NEW_SESSION = %r{\A/apps/[^/]+/users/[^/]+/sessions(:import)?\z}.freeze
    # What an id of a path is, by the segment before it (`/apps/{app_name}/users/{user_id}/…`).
    ID_NAMES = {
      "apps" => "app_name", "users" => "user_id", "sessions" => "session_id", "events" => "event_id",
      "memories" => "memory_id"
    }.freeze
    # What an append's status says it did.
    APPEND_OUTCOMES = {201 => :stored, 200 => :replayed, 202 => :acknowledged}.freeze

    def initialize(base_url: nil, api_key: nil, headers: {}, timeout: 10, retries: 2,
                   backoff: 0.25, pool_size: 16)
      key = api_key || environment("SESSIONARY_API_KEY")
      credentials = key.nil? || key.empty? ? {} : {"Authorization" => "Bearer #{key}"}
      @written = Versions.new
      @transport = Transport.new(
        base_url: base_url || environment("SESSIONARY_URL") || DEFAULT_URL,
        headers: credentials.merge(headers), timeout: timeout, retries: retries,
        backoff: backoff, pool_size: pool_size
      )
    end

    # Closes the idle connections; the client opens new ones if used again.
    def close = @transport.close

    # One session's methods without its app, user and id: `chat.append_event(event)`.
    def session(app_name, user_id, session_id)
      SessionHandle.new(self, app_name, user_id, session_id)
    end

    # --- Sessions ---------------------------------------------------------------------------

    # A new session, with the server's id unless `session_id`; with `ttl` (seconds) or
    # `expire_time` (epoch seconds), one that expires.
    def create_session(app_name, user_id, session_id: nil, state: nil, events: nil,
                       display_name: nil, labels: nil, ttl: nil, expire_time: nil, request_options: nil)
      body = present(sessionId: session_id, state: state, events: events&.map { |event| with_id(event) },
                     displayName: display_name, labels: labels, ttl: ttl,
                     expireTime: expire_time)
      json("POST", sessions_path(app_name, user_id), body: body, request_options: request_options)
    end

    # The session with its events; with `until_seq`, as it was at that seq. It holds every
    # write this client made to it, even from a lagging read replica.
    def get_session(app_name, user_id, session_id, num_recent_events: nil, after_timestamp: nil,
                    until_seq: nil, min_version: nil, request_options: nil)
      target = sessions_path(app_name, user_id, session_id)
      query = present(numRecentEvents: num_recent_events, afterTimestamp: after_timestamp,
                      untilSeq: until_seq, minVersion: min_version || @written.of(target))
      json("GET", target, query: query, request_options: request_options)
    end

    # One page of a user's sessions, without events: `page.sessions`, `page.next_page_token`.
    # With `labels`, those that have all of them.
    def list_sessions(app_name, user_id, page_size: nil, page_token: nil, order: nil, labels: nil,
                      display_name: nil, request_options: nil)
      json("GET", sessions_path(app_name, user_id),
           query: session_filters(page_size, page_token, order, labels, display_name),
           request_options: request_options)
    end

    # Every session of a user (the filters of list_sessions), pages fetched as they are reached.
    def sessions(app_name, user_id, **filters)
      pages("sessions") { |token| list_sessions(app_name, user_id, page_token: token, **filters) }
    end

    # The same across the app's users.
    def list_app_sessions(app_name, page_size: nil, page_token: nil, order: nil, labels: nil,
                          display_name: nil, request_options: nil)
      json("GET", path("apps", app_name, "sessions"),
           query: session_filters(page_size, page_token, order, labels, display_name),
           request_options: request_options)
    end

    def app_sessions(app_name, **filters)
      pages("sessions") { |token| list_app_sessions(app_name, page_token: token, **filters) }
    end

    # Changes what is given, in one write: `state_delta` (recorded as an event by `user`), the
    # display name (nil clears it), every label (`{}` clears them), the expiry (`ttl` seconds
    # from now, or `expire_time`; nil: never). The session.
    def update_session(app_name, user_id, session_id, state_delta: nil, display_name: UNSET,
                       labels: nil, ttl: nil, expire_time: UNSET, if_match: nil, request_options: nil)
      body = present(stateDelta: state_delta, labels: labels, ttl: ttl)
      body[:displayName] = display_name unless display_name.equal?(UNSET)
      body[:expireTime] = expire_time unless expire_time.equal?(UNSET)
      # Not resent after a lost answer: a state delta records an event with a new id.
      json("PATCH", sessions_path(app_name, user_id, session_id), body: body, if_match: if_match,
           request_options: request_options)
    end

    # Records `state_delta` as an event by `user`; the session.
    def update_state(app_name, user_id, session_id, state_delta, if_match: nil, request_options: nil)
      update_session(app_name, user_id, session_id, state_delta: state_delta, if_match: if_match,
                     request_options: request_options)
    end

    # Deletes the session and its events. Not resent after a lost answer: the resend would
    # be a SessionNotFoundError.
    def delete_session(app_name, user_id, session_id, if_match: nil, request_options: nil)
      target = sessions_path(app_name, user_id, session_id)
      send_request("DELETE", target, if_match: if_match, request_options: request_options)
      @written.forget(target) # a new session may take its id
      nil
    end

    # --- Events -----------------------------------------------------------------------------

    # Stores `event` (an ADK event, a Hash), given an `id` if it has none; the event as
    # stored, with `seq`. With `if_match`, only if the session is still at that version. A
    # `partial` event is echoed back, not stored. append_event_outcome says, besides, which
    # of these happened.
    def append_event(app_name, user_id, session_id, event, if_match: nil, request_options: nil)
      append_event_outcome(app_name, user_id, session_id, event, if_match: if_match,
                           request_options: request_options).event
    end

    # As append_event, and what it did: an Appended, whose `outcome` is `:stored` (written
    # now), `:replayed` (stored before: a resend, nothing written) or `:acknowledged` (a
    # partial event, not stored).
    def append_event_outcome(app_name, user_id, session_id, event, if_match: nil, request_options: nil)
      # Safe to resend because the event carries its id: the server answers a resend of a
      # stored event with that event, even when If-Match has moved on since.
      response = send_request("POST", sessions_path(app_name, user_id, session_id, "events"),
                              body: with_id(event), if_match: if_match, idempotent: true,
                              request_options: request_options)
      Appended.new(event: Record.wrap(JSON.parse(response.body)), outcome: APPEND_OUTCOMES.fetch(response.code.to_i))
    end

    # Stores `events` at consecutive seqs, all or none (partial ones skipped); as stored.
    def append_events(app_name, user_id, session_id, events, if_match: nil, request_options: nil)
      json("POST", "#{sessions_path(app_name, user_id, session_id, 'events')}:batch",
           body: {events: events.map { |event| with_id(event) }}, if_match: if_match,
           idempotent: true, request_options: request_options).events
    end

    # One page of events by seq: `page.events`, `page.next_page_token`.
    def list_events(app_name, user_id, session_id, page_size: nil, page_token: nil, after_seq: nil,
                    after_timestamp: nil, before_timestamp: nil, order: nil, min_version: nil,
                    request_options: nil)
      session = sessions_path(app_name, user_id, session_id)
      query = present(pageSize: page_size, pageToken: page_token, afterSeq: after_seq,
                      afterTimestamp: after_timestamp, beforeTimestamp: before_timestamp,
                      order: order, minVersion: min_version || @written.of(session))
      json("GET", "#{session}/events", query: query, request_options: request_options)
    end

    # Every event (the filters of list_events), pages fetched as they are reached.
    def events(app_name, user_id, session_id, **filters)
      pages("events") { |token| list_events(app_name, user_id, session_id, page_token: token, **filters) }
    end

    # How many events the session holds, and the seqs of its oldest and newest.
    def count_events(app_name, user_id, session_id, request_options: nil)
      json("GET", "#{sessions_path(app_name, user_id, session_id, 'events')}:count",
           request_options: request_options)
    end

    # Removes an event and the events answering its function calls.
    def remove_event(app_name, user_id, session_id, event_id, if_match: nil, request_options: nil)
      json("DELETE", sessions_path(app_name, user_id, session_id, "events", event_id), if_match: if_match,
           request_options: request_options)
    end

    # Replaces an event's `content` (a redaction, say); the event as stored.
    def rewrite_event(app_name, user_id, session_id, event_id, content, if_match: nil, request_options: nil)
      json("PATCH", sessions_path(app_name, user_id, session_id, "events", event_id),
           body: {content: content}, if_match: if_match, request_options: request_options)
    end

    # The session's changes as they are committed, as StreamEvents: after `after_seq` first
    # (read back from the log; 0: the whole session), else from now. Resumes by itself after
    # a lost connection, losing and repeating nothing; ends after `closed` or `deleted`. Yields
    # each to the block, or returns an Enumerator.
    def stream_events(app_name, user_id, session_id, after_seq: nil, request_options: nil, &block)
      target = "#{sessions_path(app_name, user_id, session_id)}/events:stream"
      follow(target, after_seq, ENDS_SESSION, request_options, &block)
    end

    # A user's sessions as they are created, updated, closed and deleted, from now, until the
    # caller leaves (`break`) or the user is erased: `erased` (its data `{"userId" => …}`, nil
    # when the whole app is), after each of the user's sessions' `deleted`, is the last frame.
    def stream_sessions(app_name, user_id, request_options: nil, &block)
      follow("#{sessions_path(app_name, user_id)}:stream", nil, ENDS_USER, request_options, &block)
    end

    # An app's sessions as they are created, updated, closed and deleted, from now; an erased
    # user's `erased` is told and the stream goes on, the app's (`userId` nil) is its last frame.
    def stream_app_sessions(app_name, request_options: nil, &block)
      follow("#{path('apps', app_name, 'sessions')}:stream", nil, ENDS_APP, request_options, &block)
    end

    # --- Lineage ----------------------------------------------------------------------------

    # A new session (`session_id`, else one the server makes) with the parent's events up to
    # `at_seq`, or before the first event of `before_invocation_id`, or (with neither) all of
    # them, and its session state then.
    def fork_session(app_name, user_id, parent_id, session_id: nil, at_seq: nil, before_invocation_id: nil,
                     request_options: nil)
      body = present(sessionId: session_id, atSeq: at_seq, beforeInvocationId: before_invocation_id)
      json("POST", "#{sessions_path(app_name, user_id, parent_id)}:fork", body: body,
           request_options: request_options)
    end

    # A child session for a sub-agent; with `function_call_id`, closing it answers that call
    # of the parent. `inherit`: `none`, `all` (the parent's events) or `context` (its view).
    def create_child_session(app_name, user_id, parent_id, session_id: nil, state: nil,
                             function_call_id: nil, inherit: nil, request_options: nil)
      body = present(sessionId: session_id, state: state, functionCallId: function_call_id, inherit: inherit)
      json("POST", sessions_path(app_name, user_id, parent_id, "children"), body: body,
           request_options: request_options)
    end

    # One page of the session's forks and children, oldest first.
    def list_children(app_name, user_id, session_id, page_size: nil, page_token: nil, request_options: nil)
      json("GET", sessions_path(app_name, user_id, session_id, "children"),
           query: present(pageSize: page_size, pageToken: page_token), request_options: request_options)
    end

    def children(app_name, user_id, session_id, page_size: nil, request_options: nil)
      pages("sessions") do |token|
        list_children(app_name, user_id, session_id, page_size: page_size, page_token: token,
                      request_options: request_options)
      end
    end

    # The session's ancestors, root first.
    def lineage(app_name, user_id, session_id, request_options: nil)
      json("GET", sessions_path(app_name, user_id, session_id, "lineage"),
           request_options: request_options).sessions
    end

    # Closes the session to writes (`completed`, `failed`, `canceled`); a child made for a
    # function call answers it with `{outcome, result}`. Not resent after a lost answer: the
    # resend would be a SessionClosedError.
    def close_session(app_name, user_id, session_id, outcome, result: nil, if_match: nil,
                      request_options: nil)
      json("POST", "#{sessions_path(app_name, user_id, session_id)}:close",
           body: present(outcome: outcome, result: result), if_match: if_match,
           request_options: request_options)
    end

    # --- History surgery --------------------------------------------------------------------

    # ADK's rewind: appends the event that undoes `before_invocation_id` and all after it
    # (state included); that event. Not resent: a second rewind event would be appended.
    def rewind_session(app_name, user_id, session_id, before_invocation_id, if_match: nil,
                       request_options: nil)
      json("POST", "#{sessions_path(app_name, user_id, session_id)}:rewind",
           body: {beforeInvocationId: before_invocation_id}, if_match: if_match,
           request_options: request_options)
    end

    # Removes all but the newest `keep_last` events (and the answers to removed calls).
    def trim_session(app_name, user_id, session_id, keep_last, if_match: nil, request_options: nil)
      json("POST", "#{sessions_path(app_name, user_id, session_id)}:trim",
           body: {keepLast: keep_last}, if_match: if_match, request_options: request_options)
    end

    # Removes every event and the session's own state.
    def reset_session(app_name, user_id, session_id, if_match: nil, request_options: nil)
      json("POST", "#{sessions_path(app_name, user_id, session_id)}:reset", body: {}, if_match: if_match,
           request_options: request_options)
    end

    # --- Context, compaction, tool calls ----------------------------------------------------

    # What a model should see next: the live events, compactions applied, the newest that fit
    # `token_budget`, a function call never parted from its response.
    def context(app_name, user_id, session_id, token_budget: nil, request_options: nil)
      json("GET", "#{sessions_path(app_name, user_id, session_id)}/context",
           query: present(tokenBudget: token_budget), request_options: request_options)
    end

    # Appends one compaction event over the live events older than the newest `keep_last`:
    # `summary` (your text replaces them), `truncate` or `observationMask`. Not resent: a
    # second compaction event would be appended.
    def compact_session(app_name, user_id, session_id, strategy, keep_last: nil, summary: nil,
                        tool_output_max_chars: nil, if_match: nil, request_options: nil)
      body = present(strategy: strategy, keepLast: keep_last, summary: summary,
                     toolOutputMaxChars: tool_output_max_chars)
      json("POST", "#{sessions_path(app_name, user_id, session_id)}:compact", body: body, if_match: if_match,
           request_options: request_options)
    end

    # The session's function calls, in order: answered, pending or orphaned (unanswered past
    # `timeout_seconds`).
    def tool_calls(app_name, user_id, session_id, status: nil, timeout_seconds: nil, request_options: nil)
      json("GET", "#{sessions_path(app_name, user_id, session_id)}/toolCalls",
           query: present(status: status, timeoutSeconds: timeout_seconds),
           request_options: request_options).tool_calls
    end

    # Answers each orphaned call with an error response. A second heal answers nothing, so it
    # is resent after a lost answer, but for one under `if_match` (a 412 the second time).
    def heal_session(app_name, user_id, session_id, timeout_seconds: nil, if_match: nil, request_options: nil)
      json("POST", "#{sessions_path(app_name, user_id, session_id)}:heal",
           body: present(timeoutSeconds: timeout_seconds), if_match: if_match, idempotent: if_match.nil?,
           request_options: request_options)
    end

    # --- Pending input ----------------------------------------------------------------------

    # Queues an event apart from the log (a user typing while a turn runs); it as queued.
    def queue_event(app_name, user_id, session_id, event, request_options: nil)
      json("POST", "#{sessions_path(app_name, user_id, session_id)}/pending",
           body: with_id(event), idempotent: true, request_options: request_options)
    end

    # The queued events, in the order they came.
    def pending(app_name, user_id, session_id, request_options: nil)
      json("GET", "#{sessions_path(app_name, user_id, session_id)}/pending",
           request_options: request_options).events
    end

    # Empties the queue without appending it.
    def clear_pending(app_name, user_id, session_id, request_options: nil)
      send_request("DELETE", "#{sessions_path(app_name, user_id, session_id)}/pending", idempotent: true,
                   request_options: request_options)
      nil
    end

    # Appends every queued event, in order, in one transaction; the events as stored.
    # ToolCallsPendingError while a function call is unanswered, unless `force`.
    def promote_pending(app_name, user_id, session_id, force: false, if_match: nil, request_options: nil)
      json("POST", "#{sessions_path(app_name, user_id, session_id)}/pending:promote",
           body: {force: force}, if_match: if_match, request_options: request_options).events
    end

    # --- Export and import ------------------------------------------------------------------

    # The session as NDJSON, exactly: a header line, then its events as stored.
    def export_session(app_name, user_id, session_id, request_options: nil)
      # NDJSON, not the JSON document that `Accept: application/json` would choose.
      text(send_request("GET", "#{sessions_path(app_name, user_id, session_id)}:export",
                        headers: {"Accept" => "application/x-ndjson"}, request_options: request_options))
    end

    # Stores an export under this app and user exactly as it was, all or nothing; the same
    # export again writes nothing. The session, without events.
    def import_session(app_name, user_id, ndjson, request_options: nil)
      json("POST", "#{sessions_path(app_name, user_id)}:import",
           body: ndjson, headers: {"Content-Type" => "application/x-ndjson"}, idempotent: true,
           request_options: request_options)
    end

    # Everything of a user of the app as NDJSON, from one snapshot, for import_user: their
    # state, each session as export_session gives it, their `user:` artifacts, their memories
    # (nothing at all, "", for a user with nothing stored). With `to:` (anything that answers
    # `write`: a File) or a block, written there or yielded in chunks as they arrive, never held
    # whole (an export may be larger than memory), and nil is returned; else the String, whole.
    # An export cut short is an APIConnectionError.
    def export_user(app_name, user_id, to: nil, request_options: nil, &block)
      data = String.new(encoding: Encoding::BINARY) unless block || to
      sink = block || (to && ->(chunk) { to.write(chunk) }) || ->(chunk) { data << chunk }
      send_request("GET", "#{path('apps', app_name, 'users', user_id)}:export",
                   headers: {"Accept" => "application/x-ndjson"}, request_options: request_options, &sink)
      data&.force_encoding(Encoding::UTF_8)
    end

    # Stores a user's export (export_user's NDJSON) under this app and user as it was, all or
    # nothing, in one transaction: its sessions, state (merged: its keys win), `user:` artifacts
    # and memories. Streamed: a String, or an IO (a File, a pipe…, read from where it is), never
    # read whole. What it created and what was there already the same (`created`, `unchanged`,
    # `user_state_keys`): the same export again creates nothing, so a String, or an IO that can
    # seek, is sent again after a lost answer; another IO, once. Anything stored under the same
    # id and different raises a ConflictError (SessionAlreadyExistsError,
    # MemoryAlreadyExistsError), and nothing is imported.
    def import_user(app_name, user_id, export, request_options: nil)
      json("POST", "#{path('apps', app_name, 'users', user_id)}:import", upload: Transport::Upload.new(export),
           headers: {"Content-Type" => "application/x-ndjson"}, idempotent: true, request_options: request_options)
    end

    # --- Artifacts --------------------------------------------------------------------------
    # Each serves a session's names and its user's `user:` names, or, with `session_id` nil,
    # the user's alone (the `…_user_artifact…` operations). A name's `/`s separate its
    # segments, as a folder's do.

    # One page of the newest version of each artifact name, by name: `page.artifacts`; with
    # `until_seq`, as the session was at that seq.
    def list_artifacts(app_name, user_id, session_id, until_seq: nil, page_size: nil, page_token: nil,
                       request_options: nil)
      json("GET", artifact_path(app_name, user_id, session_id),
           query: present(untilSeq: until_seq, pageSize: page_size, pageToken: page_token),
           request_options: request_options)
    end

    # The newest version of every artifact name (the filters of list_artifacts), pages
    # fetched as they are reached.
    def artifacts(app_name, user_id, session_id, **filters)
      pages("artifacts") { |token| list_artifacts(app_name, user_id, session_id, page_token: token, **filters) }
    end

    # Saves the next version of `name` from ADK's Part (a Hash): `inlineData` (`data` in
    # base64), `text`, or `fileData` (a reference by URI, no bytes). Read whole by the server:
    # upload large files instead. The version's record. Sent once: again, it would save
    # another version.
    def save_artifact(app_name, user_id, session_id, name, artifact, custom_metadata: nil, request_options: nil)
      body = present(filename: name, artifact: artifact, customMetadata: custom_metadata)
      json("POST", artifact_path(app_name, user_id, session_id), body: body, request_options: request_options)
    end

    # Saves the next version of `name` from `data`, streamed: a String (its bytes) or an IO (a
    # File, a pipe…, read from where it is), up to the server's limit (512 MiB by default).
    # `mime_type` is what it is served as (application/octet-stream by default),
    # `custom_metadata` any JSON object. A String, or an IO that can seek, is sent again if the
    # connection was refused; another IO, once. The version's record.
    def upload_artifact(app_name, user_id, session_id, name, data, mime_type: nil, custom_metadata: nil,
                        display_name: nil, request_options: nil)
      headers = {"Content-Type" => mime_type || "application/octet-stream"}
      headers["Artifact-Metadata"] = metadata_header(custom_metadata) unless custom_metadata.nil?
      json("POST", artifact_path(app_name, user_id, session_id, name), query: present(displayName: display_name),
           upload: Transport::Upload.new(data), headers: headers, request_options: request_options)
    end

    # A version's content (the newest, or `version`), or the bytes of it `range` names (a
    # Range: `0..99`, `100..`, `-100..` for the last 100), as an ArtifactContent: its `data` a
    # String, or, with `to:` (anything that answers `write`) or a block, written there or
    # yielded in chunks as they arrive, never held whole. A download cut short is an
    # APIConnectionError.
    def download_artifact(app_name, user_id, session_id, name, version: nil, range: nil, to: nil,
                          request_options: nil, &block)
      data = String.new(encoding: Encoding::BINARY) unless block || to
      sink = block || (to && ->(chunk) { to.write(chunk) }) || ->(chunk) { data << chunk }
      headers = {"Accept" => "*/*", "Accept-Encoding" => "identity"} # the bytes as they are: what `range` counts
      headers["Range"] = byte_range(range) unless range.nil?
      response = send_request("GET", artifact_path(app_name, user_id, session_id, name),
                              query: present(version: version), headers: headers, redirects: true,
                              request_options: request_options, &sink)
      content_of(response, data)
    end

    # One page of the versions of `name`, oldest first, each with its record: `page.versions`.
    def list_artifact_versions(app_name, user_id, session_id, name, page_size: nil, page_token: nil,
                               request_options: nil)
      json("GET", artifact_path(app_name, user_id, session_id, name, "versions"),
           query: present(pageSize: page_size, pageToken: page_token), request_options: request_options)
    end

    # Every version of `name`, oldest first, pages fetched as they are reached.
    def artifact_versions(app_name, user_id, session_id, name, **filters)
      pages("versions") do |token|
        list_artifact_versions(app_name, user_id, session_id, name, page_token: token, **filters)
      end
    end

    # The record of a version of `name` (the newest, or `version`), not its content.
    def artifact_version(app_name, user_id, session_id, name, version: nil, request_options: nil)
      json("GET", artifact_path(app_name, user_id, session_id, name, "versions", version || "latest"),
           request_options: request_options)
    end

    # Deletes every version of `name`; a later save starts again at version 0. Not resent after
    # a lost answer: the resend would be an ArtifactNotFoundError.
    def delete_artifact(app_name, user_id, session_id, name, request_options: nil)
      send_request("DELETE", artifact_path(app_name, user_id, session_id, name), request_options: request_options)
      nil
    end

    # --- Memories ---------------------------------------------------------------------------
    # A user's (`…_memory`, `…_memories`) and the whole app's, which every user of it recalls
    # (`…_app_memory`, `…_app_memories`). Each change is a new revision: `if_match:` takes the
    # `revision` read. A recall finds them by meaning (once the server's model has embedded
    # them: embeddings_status) and by words.

    # Remembers a `text`, or ADK's `content`, of the user's, with `metadata`, `topics`, an
    # expiry (`ttl` seconds from now, or `expire_time`) and its `source` (`{sessionId:,
    # eventIds:}`); under `memory_id` if given, else one the server makes. The memory. Not
    # resent after a lost answer: the resend would be a second memory, or a
    # MemoryAlreadyExistsError.
    def create_memory(app_name, user_id, text: nil, content: nil, memory_id: nil, author: nil, metadata: nil,
                      topics: nil, source: nil, embedding: nil, ttl: nil, expire_time: nil, request_options: nil)
      body = present(id: memory_id, text: text, content: content, author: author, metadata: metadata,
                     topics: topics, source: source, embedding: embedding, ttl: ttl, expireTime: expire_time)
      json("POST", memories_path(app_name, user_id), body: body, request_options: request_options)
    end

    # One page of the user's memories, newest change first (`page.memories`); only those of a
    # `topic`, a `session_id` or a `kind` (`text`, `event`), if given.
    def list_memories(app_name, user_id, topic: nil, session_id: nil, kind: nil, page_size: nil, page_token: nil,
                      request_options: nil)
      json("GET", memories_path(app_name, user_id),
           query: memory_filters(topic, session_id, kind, page_size, page_token), request_options: request_options)
    end

    # Every memory of the user (the filters of list_memories), pages fetched as they are reached.
    def memories(app_name, user_id, **filters)
      pages("memories") { |token| list_memories(app_name, user_id, page_token: token, **filters) }
    end

    # The user's memories (and the app's, unless `include_app` is false) that best answer
    # `query` (or the client's `embedding` of it), best first, each with its `score`: by meaning
    # and by words, fused (`mode`: `hybrid`, `meaning`, `words`). `page.memories`,
    # `page.recalled_by`, and `page.note` when recall by meaning was left out. A read: resent
    # as one.
    def recall_memories(app_name, user_id, query = nil, embedding: nil, limit: nil, min_score: nil,
                        min_similarity: nil, topics: nil, after_timestamp: nil, before_timestamp: nil,
                        include_app: nil, mode: nil, request_options: nil)
      body = present(query: query, embedding: embedding, limit: limit, minScore: min_score,
                     minSimilarity: min_similarity, topics: topics, afterTimestamp: after_timestamp,
                     beforeTimestamp: before_timestamp, includeApp: include_app, mode: mode)
      json("POST", "#{memories_path(app_name, user_id)}:recall", body: body, idempotent: true,
           request_options: request_options)
    end

    # A memory of the user as it is now; its `revision` is what `if_match:` takes.
    def get_memory(app_name, user_id, memory_id, request_options: nil)
      json("GET", memories_path(app_name, user_id, memory_id), request_options: request_options)
    end

    # Changes what is given, as a new revision: the `text` or `content`, the `author` (nil
    # clears it), `metadata` and `topics` (each whole), the client's `embedding`, the expiry
    # (`ttl`, or `expire_time`; nil: never). The memory now.
    def update_memory(app_name, user_id, memory_id, text: nil, content: nil, author: UNSET, metadata: nil,
                      topics: nil, embedding: nil, ttl: nil, expire_time: UNSET, if_match: nil, request_options: nil)
      body = memory_changes(text, content, author, metadata, topics, embedding, ttl, expire_time)
      json("PATCH", memories_path(app_name, user_id, memory_id), body: body, if_match: if_match,
           request_options: request_options)
    end

    # Forgets a memory, its revisions and its vectors. Not resent after a lost answer: the
    # resend would be a MemoryNotFoundError.
    def delete_memory(app_name, user_id, memory_id, if_match: nil, request_options: nil)
      send_request("DELETE", memories_path(app_name, user_id, memory_id), if_match: if_match,
                   request_options: request_options)
      nil
    end

    # One page of a memory's revisions, newest (the current one) first: `page.revisions`.
    def list_memory_revisions(app_name, user_id, memory_id, page_size: nil, page_token: nil, request_options: nil)
      json("GET", memories_path(app_name, user_id, memory_id, "revisions"),
           query: present(pageSize: page_size, pageToken: page_token), request_options: request_options)
    end

    # Every revision of a memory, newest first, pages fetched as they are reached.
    def memory_revisions(app_name, user_id, memory_id, **filters)
      pages("revisions") do |token|
        list_memory_revisions(app_name, user_id, memory_id, page_token: token, **filters)
      end
    end

    # Restores `revision` as a new revision (nothing is lost); the memory now.
    def roll_back_memory(app_name, user_id, memory_id, revision, if_match: nil, request_options: nil)
      json("POST", "#{memories_path(app_name, user_id, memory_id)}:rollback", body: {revision: revision},
           if_match: if_match, request_options: request_options)
    end

    # Remembers a fact of the whole app, which every user of it recalls; as create_memory.
    def create_app_memory(app_name, text: nil, content: nil, memory_id: nil, author: nil, metadata: nil,
                          topics: nil, source: nil, embedding: nil, ttl: nil, expire_time: nil, request_options: nil)
      body = present(id: memory_id, text: text, content: content, author: author, metadata: metadata,
                     topics: topics, source: source, embedding: embedding, ttl: ttl, expireTime: expire_time)
      json("POST", memories_path(app_name, nil), body: body, request_options: request_options)
    end

    # One page of the app's own memories, newest change first.
    def list_app_memories(app_name, topic: nil, session_id: nil, kind: nil, page_size: nil, page_token: nil,
                          request_options: nil)
      json("GET", memories_path(app_name, nil),
           query: memory_filters(topic, session_id, kind, page_size, page_token), request_options: request_options)
    end

    def app_memories(app_name, **filters)
      pages("memories") { |token| list_app_memories(app_name, page_token: token, **filters) }
    end

    # The app's own memories that best answer `query`, best first; as recall_memories.
    def recall_app_memories(app_name, query = nil, embedding: nil, limit: nil, min_score: nil, min_similarity: nil,
                            topics: nil, after_timestamp: nil, before_timestamp: nil, mode: nil, request_options: nil)
      body = present(query: query, embedding: embedding, limit: limit, minScore: min_score,
                     minSimilarity: min_similarity, topics: topics, afterTimestamp: after_timestamp,
                     beforeTimestamp: before_timestamp, mode: mode)
      json("POST", "#{memories_path(app_name, nil)}:recall", body: body, idempotent: true,
           request_options: request_options)
    end

    # A memory of the app as it is now.
    def get_app_memory(app_name, memory_id, request_options: nil)
      json("GET", memories_path(app_name, nil, memory_id), request_options: request_options)
    end

    # Changes a memory of the app, as update_memory.
    def update_app_memory(app_name, memory_id, text: nil, content: nil, author: UNSET, metadata: nil, topics: nil,
                          embedding: nil, ttl: nil, expire_time: UNSET, if_match: nil, request_options: nil)
      body = memory_changes(text, content, author, metadata, topics, embedding, ttl, expire_time)
      json("PATCH", memories_path(app_name, nil, memory_id), body: body, if_match: if_match,
           request_options: request_options)
    end

    # Forgets a memory of the app, as delete_memory.
    def delete_app_memory(app_name, memory_id, if_match: nil, request_options: nil)
      send_request("DELETE", memories_path(app_name, nil, memory_id), if_match: if_match,
                   request_options: request_options)
      nil
    end

    # One page of the revisions of a memory of the app, newest first.
    def list_app_memory_revisions(app_name, memory_id, page_size: nil, page_token: nil, request_options: nil)
      json("GET", memories_path(app_name, nil, memory_id, "revisions"),
           query: present(pageSize: page_size, pageToken: page_token), request_options: request_options)
    end

    def app_memory_revisions(app_name, memory_id, **filters)
      pages("revisions") { |token| list_app_memory_revisions(app_name, memory_id, page_token: token, **filters) }
    end

    # Restores `revision` of a memory of the app, as roll_back_memory.
    def roll_back_app_memory(app_name, memory_id, revision, if_match: nil, request_options: nil)
      json("POST", "#{memories_path(app_name, nil, memory_id)}:rollback", body: {revision: revision},
           if_match: if_match, request_options: request_options)
    end

    # Adds the session's events to its user's memory (ADK's add_session_to_memory): those of
    # `event_ids`, or else each with text that the server takes (by default, what the user
    # said). Each is a memory of kind `event` that keeps no copy of the event's text and is
    # forgotten with the session. `remembered.remembered`: how many were added now; again
    # later, only what is new is added, so it is resent after a lost answer as a read is.
    def remember_session(app_name, user_id, session_id, event_ids: nil, request_options: nil)
      json("POST", "#{sessions_path(app_name, user_id, session_id)}:remember", body: present(eventIds: event_ids),
           idempotent: true, request_options: request_options)
    end

    # How the server recalls now (`meaning+words`, or `words` and why), its model, and how many
    # memories wait to be embedded (`pending`: 0 once all are recalled by meaning).
    def embeddings_status(request_options: nil) = json("GET", "/embeddings", request_options: request_options)

    # --- Search, usage, browsing ------------------------------------------------------------

    # One page of the app's events matching `q` (web-search syntax: `refund order`, `"full
    # refund"`, `refund or return`, `refund -partial`), best first: `page.hits`.
    def search(app_name, q, user_id: nil, session_id: nil, author: nil, after_timestamp: nil,
               before_timestamp: nil, page_size: nil, page_token: nil, request_options: nil)
      query = present(q: q, userId: user_id, sessionId: session_id, author: author,
                      afterTimestamp: after_timestamp, beforeTimestamp: before_timestamp,
                      pageSize: page_size, pageToken: page_token)
      json("GET", path("apps", app_name, "search"), query: query, request_options: request_options)
    end

    # Every hit of a search, pages fetched as they are reached.
    def search_hits(app_name, q, **filters)
      pages("hits") { |token| search(app_name, q, page_token: token, **filters) }
    end

    # The token counts of the app's events, by user and in all.
    def usage(app_name, user_id: nil, after_timestamp: nil, before_timestamp: nil, request_options: nil)
      query = present(userId: user_id, afterTimestamp: after_timestamp, beforeTimestamp: before_timestamp)
      json("GET", path("apps", app_name, "usage"), query: query, request_options: request_options)
    end

    # One page of the apps that have sessions, by name.
    def list_apps(page_size: nil, page_token: nil, request_options: nil)
      json("GET", "/apps", query: present(pageSize: page_size, pageToken: page_token),
           request_options: request_options)
    end

    def apps(page_size: nil, request_options: nil)
      pages("apps") do |token|
        list_apps(page_size: page_size, page_token: token, request_options: request_options)
      end
    end

    # One page of the app's users that have sessions, by id.
    def list_users(app_name, page_size: nil, page_token: nil, request_options: nil)
      json("GET", path("apps", app_name, "users"), query: present(pageSize: page_size, pageToken: page_token),
           request_options: request_options)
    end

    def users(app_name, page_size: nil, request_options: nil)
      pages("users") do |token|
        list_users(app_name, page_size: page_size, page_token: token, request_options: request_options)
      end
    end

    # --- App and user state -----------------------------------------------------------------

    # The app's state, keys without their `app:` prefix.
    def app_state(app_name, request_options: nil)
      json("GET", path("apps", app_name, "state"), request_options: request_options).state
    end

    # Merges `state_delta` into the app's state; the state now. Resent after a lost answer:
    # merging the same keys twice leaves what merging once does.
    def update_app_state(app_name, state_delta, request_options: nil)
      json("PATCH", path("apps", app_name, "state"), body: {stateDelta: state_delta}, idempotent: true,
           request_options: request_options).state
    end

    # The user's state, keys without their `user:` prefix.
    def user_state(app_name, user_id, request_options: nil)
      json("GET", path("apps", app_name, "users", user_id, "state"), request_options: request_options).state
    end

    def update_user_state(app_name, user_id, state_delta, request_options: nil)
      json("PATCH", path("apps", app_name, "users", user_id, "state"),
           body: {stateDelta: state_delta}, idempotent: true, request_options: request_options).state
    end

    # --- Erasing a user, or an app ----------------------------------------------------------

    # Erases everything of a user of an app: every session (forks, children, closed ones) with
    # its events, the user's state, memories, artifacts and the keys made for the user. The
    # Erasure, done (`status` `done`, `removed` the rows removed by kind: `removed["sessions"]`)
    # or, past the server's SESSIONARY_ERASE_WAIT, still running (a 202: `status` `running`,
    # `finish_time` nil; get_erasure reads it again); both are answers, neither raises. While it
    # runs, the user's writes raise UserErasingError. Erasing again is safe (it erases what was
    # written since: nothing, usually), but not resent after a lost answer: once the first is
    # done, the resend would be a second erase, answered with its counts (none) for the first's.
    def erase_user(app_name, user_id, request_options: nil)
      user = path("apps", app_name, "users", user_id)
      erasure = json("DELETE", user, request_options: request_options)
      @written.forget_under("#{user}/sessions/") # new sessions may take their ids
      erasure
    end

    # The user's latest erase: running (its progress so far) or done (what it removed), as
    # erase_user answers it; ErasureNotFoundError if the user was never erased.
    def get_erasure(app_name, user_id, request_options: nil)
      json("GET", path("apps", app_name, "users", user_id, "erasure"), request_options: request_options)
    end

    # Erases everything of an app (an admin key only): what erase_user erases, for every user of
    # the app, and the app's own state, memories and keys. The AppErasure (an Erasure without a
    # user_id), done or still running (a 202), as erase_user answers; while it runs, writes that
    # make something of the app raise AppErasingError. Not resent after a lost answer, as
    # erase_user.
    def erase_app(app_name, request_options: nil)
      app = path("apps", app_name)
      erasure = json("DELETE", app, request_options: request_options)
      @written.forget_under("#{app}/users/") # new sessions may take their ids
      erasure
    end

    # The app's latest erase (an admin key only), as erase_app answers it; ErasureNotFoundError
    # if the app was never erased.
    def get_app_erasure(app_name, request_options: nil)
      json("GET", path("apps", app_name, "erasure"), request_options: request_options)
    end

    # --- Operations -------------------------------------------------------------------------

    # One page of the audit log, newest first (an admin key only): session deletes, imports,
    # keys made and revoked, retention sweeps; those of an app, of a user of it (`user_id:`
    # needs `app_name:`), of an `action:` (`session.delete`), with `time` >= `after_timestamp:`
    # and < `before_timestamp:`. `page.records`; a record's `user` is a keyed hash of the user's
    # id, never the id.
    def list_audit_records(app_name: nil, user_id: nil, action: nil, after_timestamp: nil, before_timestamp: nil,
                           page_size: nil, page_token: nil, request_options: nil)
      query = present(app: app_name, userId: user_id, action: action, afterTimestamp: after_timestamp,
                      beforeTimestamp: before_timestamp, pageSize: page_size, pageToken: page_token)
      json("GET", "/audit", query: query, request_options: request_options)
    end

    # Every audit record (with the filters of `list_audit_records`), newest first, pages
    # fetched as they are reached.
    def audit_records(**filters)
      pages("records") { |token| list_audit_records(page_token: token, **filters) }
    end

    # What the API key of this client may reach (`/auth/key`).
    def key_scope(request_options: nil) = json("GET", "/auth/key", request_options: request_options)

    # The process answers (`/healthz`); says nothing of the database.
    def health(request_options: nil) = json("GET", "/healthz", request_options: request_options)

    # The database answers, at the expected schema (`/readyz`); else ServiceUnavailableError.
    def readiness(request_options: nil) = json("GET", "/readyz", request_options: request_options)

    # The Prometheus metrics of the worker that answered, as text.
    def metrics(request_options: nil)
      text(send_request("GET", "/metrics", request_options: request_options))
    end

    private

    # A variable of the environment, unless it is unset or empty.
    def environment(name) = ENV.fetch(name, "").then { |value| value.empty? ? nil : value }

    def send_request(method, target, query: nil, body: nil, upload: nil, headers: {}, if_match: nil,
                     idempotent: false, redirects: false, request_options: nil, &sink)
      headers = headers.merge("If-Match" => Client.if_match_header(if_match)) unless if_match.nil?
      idempotent ||= method == "GET"
      response = @transport.request(method, target, query: query, body: body, upload: upload, headers: headers,
                                    idempotent: idempotent, redirects: redirects,
                                    options: call_options(request_options), &sink)
      note_version(target, response) unless method == "GET"
      response
    end

    # Notes the version a write made (its ETag), for the session of its path or, for a new
    # session (a create, an import, a fork, a child), the one its answer is. Another ETag (a
    # memory's revision) is no session's.
    def note_version(target, response)
      version = response["etag"].to_s[/\A"(\d+)"\z/, 1]
      session = target[SESSION]
      return if version.nil? || (session.nil? && !target.match?(NEW_SESSION))

      if session.nil? || target.end_with?(":fork", "/children")
        made = JSON.parse(response.body)
        session = sessions_path(made["appName"], made["userId"], made["id"])
      end
      @written.saw(session, version.to_i)
    end

    def json(method, target, **options)
      Record.wrap(JSON.parse(send_request(method, target, **options).body))
    end

    def text(response) = response.body.to_s.force_encoding(Encoding::UTF_8)

    # The items of every page of a listing, as an Enumerator that fetches each page when the
    # iteration reaches it.
    def pages(items)
      Enumerator.new do |out|
        token = nil
        loop do
          page = yield token
          page[items].each { |item| out << item }
          token = page.next_page_token
          break if token.nil?
        end
      end
    end

    # A stream's frames, yielded to the block, or as an Enumerator without one.
    def follow(target, after, ends, request_options, &block)
      frames = Stream.follow(@transport, target, after, ends, call_options(request_options))
      block ? frames.each(&block) : frames
    end

    # The `request_options:` of a call, their names checked: a misspelt one would be ignored.
    def call_options(given)
      options = (given || {}).to_h.transform_keys(&:to_sym)
      unknown = options.keys - Transport::REQUEST_OPTIONS
      return options if unknown.empty?

      raise ArgumentError,
            "request_options takes #{Transport::REQUEST_OPTIONS.join(', ')}, not #{unknown.join(', ')}"
    end

    def session_filters(page_size, page_token, order, labels, display_name)
      present(pageSize: page_size, pageToken: page_token, order: order,
              label: labels&.map { |key, value| "#{key}:#{value}" }, displayName: display_name)
    end

    # The fields given (not nil).
    def present(**fields) = fields.compact

    # The event with an `id`, so that a resend of it is recognised as the same event.
    def with_id(event)
      event = event.to_h
      event[:id] || event["id"] ? event : event.merge("id" => SecureRandom.uuid)
    end

    def sessions_path(app_name, user_id, *rest) = path("apps", app_name, "users", user_id, "sessions", *rest)

    # The path of a user's memories or, with `user_id` nil, the app's own; then `rest`.
    def memories_path(app_name, user_id, *rest)
      owner = user_id.nil? ? ["apps", app_name] : ["apps", app_name, "users", user_id]
      path(*owner, "memories", *rest)
    end

    def memory_filters(topic, session_id, kind, page_size, page_token)
      present(topic: topic, sessionId: session_id, kind: kind, pageSize: page_size, pageToken: page_token)
    end

    # An update's body: what is given; nil clears the author and the expiry, where given.
    def memory_changes(text, content, author, metadata, topics, embedding, ttl, expire_time)
      body = present(text: text, content: content, metadata: metadata, topics: topics, embedding: embedding, ttl: ttl)
      body[:author] = author unless author.equal?(UNSET)
      body[:expireTime] = expire_time unless expire_time.equal?(UNSET)
      body
    end

    # The path of a session's artifacts or, with `session_id` nil, its user's; of `name` in
    # them, its `/`s kept (they separate its segments as a folder's do), each segment encoded
    # as an id is; then `rest`.
    def artifact_path(app_name, user_id, session_id, name = nil, *rest)
      artifacts = session_id.nil? ? path("apps", app_name, "users", user_id) : sessions_path(app_name, user_id, session_id)
      return "#{artifacts}/artifacts" if name.nil?

      named = name.to_s.split("/", -1).map { |part| segment(part, "name") }.join("/")
      ["#{artifacts}/artifacts/#{named}", *rest.map { |part| segment(part, "version") }].join("/")
    end

    # `/a/b/…`, each segment percent-encoded.
    def path(*segments)
      "/" + segments.each_with_index.map { |id, n| segment(id, ID_NAMES.fetch(segments[n - 1], "id")) }.join("/")
    end

    # An id as a path segment, percent-encoded: ids may hold `/`, `?`, `#` or spaces. A dot
    # segment is encoded too, so that it reaches the server as an id, which refuses it,
    # rather than being resolved by something in between (removing event `..` would delete
    # the session). An id that is not UTF-8 is refused here, as the server would refuse it;
    # `what` names it there.
    def segment(id, what)
      bytes = id.to_s.b
      raise Sessionary.refused("an id must be valid UTF-8", "path", what) unless Sessionary.utf8?(bytes)

      encoded = bytes.gsub(/[^A-Za-z0-9\-._~]/) { |byte| format("%%%02X", byte.ord) }
      %w[. ..].include?(encoded) ? encoded.gsub(".", "%2E") : encoded
    end

    # Custom metadata as the Artifact-Metadata header carries it: JSON, ASCII alone (a
    # header's bytes are not UTF-8), every other character as a `\u` escape.
    def metadata_header(metadata)
      raise Sessionary.refused("strings must be valid UTF-8", "header", "Artifact-Metadata") unless Sessionary.utf8?(metadata)

      JSON.generate(metadata, ascii_only: true).gsub("\x7F", "\\u007f")
    end

    # The Range header of a Range of bytes: `0..99`, `0...100`, `100..` (to the end), `-100..`
    # (the last 100).
    def byte_range(range)
      first = range.begin if range.is_a?(Range)
      last = range.end if range.is_a?(Range)
      unless first.is_a?(Integer) && (last.nil? || (first >= 0 && last.is_a?(Integer)))
        raise ArgumentError, "range: takes a Range of bytes (0..99, 100.., -100..), not #{range.inspect}"
      end
      return "bytes=#{first}" if first.negative?

      "bytes=#{first}-#{last && (range.exclude_end? ? last - 1 : last)}"
    end

    # What a download's answer carries: its content (in `data`, unless it went elsewhere) and
    # what its headers say of it; a reference's 303, its Location.
    def content_of(response, data)
      version = response["artifact-version"]&.to_i
      return ArtifactContent.new(version: version, file_uri: response["location"]) if response.is_a?(Net::HTTPRedirection)

      mime_type = response["content-type"]
      data&.force_encoding(Encoding::UTF_8) if mime_type.to_s.match?(/;\s*charset="?utf-8"?/i)
      part = response["content-range"].to_s.match(%r{\Abytes (\d+)-(\d+)/(\d+)\z})
      ArtifactContent.new(
        data: data, mime_type: mime_type, version: version, sha256: response["etag"]&.delete('"'),
        range: part && (part[1].to_i..part[2].to_i), size: part ? part[3].to_i : response.content_length,
        file_uri: nil
      )
    end

    class << self
      # The If-Match value of a version: a session's `version` (7), its ETag as read ('"7"'),
      # or "*" (any version, but the session exists).
      def if_match_header(version)
        tag = version.to_s.strip
        tag = %("#{tag}") if tag.match?(/\A\d+\z/)
        return tag if tag == "*" || tag.match?(/\A"\d+"\z/)

        raise ArgumentError, %(if_match takes a version, its ETag ('"7"') or "*", not #{version.inspect})
      end
    end
  end

  # The version each session was at after this client's last write to it, for the reads that
  # follow; the most recent `size` sessions (a Hash keeps its order: a session noted again
  # moves to the end).
  class Versions
    def initialize(size = 10_000)
      @size = size
      @versions = {}
      @lock = Mutex.new
    end

    def of(session) = @lock.synchronize { @versions[session] }

    def saw(session, version)
      @lock.synchronize do
        @versions[session] = [@versions.delete(session) || 0, version].max
        @versions.delete(@versions.each_key.first) while @versions.size > @size
      end
    end

    def forget(session) = @lock.synchronize { @versions.delete(session) }

    # Forgets every session whose path starts with `prefix` (a user's or an app's, once erased).
    def forget_under(prefix) = @lock.synchronize { @versions.delete_if { |session, _| session.start_with?(prefix) } }
  end
end
