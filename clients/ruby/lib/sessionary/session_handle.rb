# frozen_string_literal: true

module Sessionary
  # One session of a client, so that calls stop repeating its app, user and id: each method is
  # the client's of the same meaning, with the same arguments after those three
  # (`chat.append_event(event)`; `get` is `get_session`, `fork` is `fork_session`, `remember`
  # is `remember_session`…).
  class SessionHandle
    METHODS = {
      get: :get_session, update: :update_session, update_state: :update_state,
      delete: :delete_session, append_event: :append_event, append_event_outcome: :append_event_outcome,
      append_events: :append_events,
      list_events: :list_events, events: :events, count_events: :count_events,
      remove_event: :remove_event, rewrite_event: :rewrite_event, stream_events: :stream_events,
      fork: :fork_session, create_child: :create_child_session, list_children: :list_children,
      children: :children, lineage: :lineage, close: :close_session, rewind: :rewind_session,
      trim: :trim_session, reset: :reset_session, context: :context, compact: :compact_session,
      tool_calls: :tool_calls, heal: :heal_session, queue_event: :queue_event, pending: :pending,
      clear_pending: :clear_pending, promote_pending: :promote_pending, export: :export_session,
      list_artifacts: :list_artifacts, artifacts: :artifacts, save_artifact: :save_artifact,
      upload_artifact: :upload_artifact, download_artifact: :download_artifact,
      list_artifact_versions: :list_artifact_versions, artifact_versions: :artifact_versions,
      artifact_version: :artifact_version, delete_artifact: :delete_artifact, remember: :remember_session
    }.freeze

    attr_reader :client, :app_name, :user_id, :session_id

    def initialize(client, app_name, user_id, session_id)
      @client = client
      @app_name = app_name
      @user_id = user_id
      @session_id = session_id
    end

    METHODS.each do |name, method|
      define_method(name) do |*args, **options, &block|
        @client.public_send(method, @app_name, @user_id, @session_id, *args, **options, &block)
      end
    end

    def inspect
      "#<Sessionary::SessionHandle #{@session_id.inspect} of #{@user_id.inspect} in #{@app_name.inspect}>"
    end
  end
end
