package sessionary

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// The client is written by hand on net/http; these tests hold it to the committed spec: a
// method for every operation, and the fields of every schema it types.

var methodOf = map[string]string{
	"append_event": "AppendEvent", "list_events": "ListEvents", "append_events": "AppendEvents",
	"count_events": "CountEvents", "create_session": "CreateSession", "list_sessions": "ListSessions",
	"get_session": "GetSession", "delete_session": "DeleteSession", "update_session_state": "UpdateSession",
	"list_app_sessions": "ListAppSessions", "fork_session": "Fork", "create_child_session": "CreateChild",
	"list_children": "ListChildren", "close_session": "CloseSession", "get_lineage": "Lineage",
	"rewind_session": "Rewind", "trim_session": "Trim", "reset_session": "Reset",
	"remove_event": "RemoveEvent", "rewrite_event": "RewriteEvent", "get_context": "Context",
	"compact_session": "Compact", "list_tool_calls": "ToolCalls", "heal_session": "Heal",
	"queue_event": "QueueEvent", "list_pending": "Pending", "clear_pending": "ClearPending",
	"promote_pending": "PromotePending", "get_app_usage": "Usage", "search_events": "Search",
	"export_session": "Export", "import_session": "Import", "stream_events": "StreamEvents",
	"stream_user_sessions": "StreamSessions", "stream_app_sessions": "StreamAppSessions",
	"get_app_state": "AppState", "update_app_state": "UpdateAppState", "get_user_state": "UserState",
	"update_user_state": "UpdateUserState", "list_apps": "ListApps", "list_users": "ListUsers",
	"get_key_scope": "KeyScope", "healthz": "Health", "readyz": "Readiness", "metrics": "Metrics",
	// One method serves a session's artifacts and, with session "", the user's.
	"list_artifacts": "ListArtifacts", "list_user_artifacts": "ListArtifacts",
	"save_artifact": "SaveArtifact", "save_user_artifact": "SaveArtifact",
	"upload_artifact": "UploadArtifact", "upload_user_artifact": "UploadArtifact",
	"download_artifact": "DownloadArtifact", "download_user_artifact": "DownloadArtifact",
	"list_artifact_versions": "ListArtifactVersions", "list_user_artifact_versions": "ListArtifactVersions",
	"get_artifact_version": "GetArtifactVersion", "get_user_artifact_version": "GetArtifactVersion",
	"delete_artifact": "DeleteArtifact", "delete_user_artifact": "DeleteArtifact",
	"create_memory": "CreateMemory", "list_memories": "ListMemories", "recall_memories": "RecallMemories",
	"get_memory": "GetMemory", "update_memory": "UpdateMemory", "delete_memory": "DeleteMemory",
	"list_memory_revisions": "ListMemoryRevisions", "roll_back_memory": "RollBackMemory",
	// The app's memories have methods of their own, as its sessions do: never a user left out.
	"create_app_memory": "CreateAppMemory", "list_app_memories": "ListAppMemories",
	"recall_app_memories": "RecallAppMemories", "get_app_memory": "GetAppMemory",
	"update_app_memory": "UpdateAppMemory", "delete_app_memory": "DeleteAppMemory",
	"list_app_memory_revisions": "ListAppMemoryRevisions", "roll_back_app_memory": "RollBackAppMemory",
	"remember_session": "Remember", "embeddings_status": "EmbeddingsStatus",
	"list_audit_records": "ListAuditRecords", "erase_user": "EraseUser", "get_erasure": "GetErasure",
	"export_user": "ExportUser", "import_user": "ImportUser",
	"erase_app": "EraseApp", "get_app_erasure": "GetAppErasure",
}

var typeOf = map[string]any{
	"Session": Session{}, "Parent": Parent{}, "Usage": Usage{}, "SessionCreate": SessionCreate{},
	"SessionUpdate": SessionUpdate{}, "SessionFork": SessionFork{}, "ChildCreate": ChildCreate{},
	"SessionCompact": SessionCompact{}, "SessionClose": SessionClose{}, "SessionRewind": SessionRewind{},
	"SessionTrim": SessionTrim{}, "SessionHeal": SessionHeal{}, "PendingPromote": PendingPromote{},
	"SessionPage": SessionPage{}, "EventPage": EventPage{},
	"EventCount": EventCount{}, "EventsRemoved": EventsRemoved{}, "Trimmed": Trimmed{}, "HealResult": Healed{},
	"ContextView": ContextView{}, "ToolCall": ToolCall{}, "SearchHit": SearchHit{}, "SearchPage": SearchPage{},
	"AppSummary": AppSummary{}, "AppPage": AppPage{}, "UserSummary": UserSummary{}, "UserPage": UserPage{},
	"AppUsage": AppUsage{}, "UserUsage": UserUsage{}, "TotalUsage": TotalUsage{}, "KeyScope": KeyScope{},
	"Health": Health{}, "Readiness": Readiness{}, "Problem": Problem{}, "Event": Event{},
	"EventActions": EventActions{}, "EventCompaction": EventCompaction{},
	"ValidationErrorItem": ValidationErrorItem{}, "ArtifactVersion": ArtifactVersion{},
	"ArtifactPage": ArtifactPage{}, "ArtifactVersionPage": ArtifactVersionPage{}, "ArtifactSave": ArtifactSave{},
	"ArtifactPart": ArtifactPart{}, "InlineArtifact": InlineArtifact{}, "ArtifactReference": ArtifactReference{},
	"Memory": Memory{}, "MemorySource": MemorySource{}, "Embedding": Embedding{}, "MemoryCreate": MemoryCreate{},
	"MemoryUpdate": MemoryUpdate{}, "MemoryRollback": MemoryRollback{}, "MemoryPage": MemoryPage{},
	"MemoryRevisionEntry": MemoryRevision{}, "MemoryRevisionPage": MemoryRevisionPage{},
	"RecallRequest": RecallQuery{}, "RecallResult": RecallResult{}, "RecalledMemory": RecalledMemory{},
	"Remember": SessionRemember{}, "RememberResult": Remembered{}, "EmbeddingsStatus": EmbeddingsStatus{},
	"AuditRecord": AuditRecord{}, "AuditPage": AuditPage{}, "Erasure": Erasure{}, "AppErasure": AppErasure{},
	"UserImport": UserImport{}, "UserImportCounts": UserImportCounts{},
}

type spec struct {
	Paths      map[string]map[string]struct{ OperationID string }
	Components struct {
		Schemas map[string]struct{ Properties map[string]json.RawMessage }
	}
}

func readSpec(t *testing.T) spec {
	data, err := os.ReadFile("../../openapi/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var s spec
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestEveryOperationHasAMethod(t *testing.T) {
	client := reflect.TypeOf(&Client{})
	for path, operations := range readSpec(t).Paths {
		for verb, operation := range operations {
			if operation.OperationID == "" {
				continue // parameters shared by a path's operations
			}
			name, ok := methodOf[operation.OperationID]
			if !ok {
				t.Errorf("%s %s (%s): no method of the client", strings.ToUpper(verb), path, operation.OperationID)
			} else if _, ok := client.MethodByName(name); !ok {
				t.Errorf("%s: the client has no method %s", operation.OperationID, name)
			}
		}
	}
}

func TestTheTypesHaveTheSchemasFields(t *testing.T) {
	schemas := readSpec(t).Components.Schemas
	for name, value := range typeOf {
		schema, ok := schemas[name]
		if !ok {
			t.Errorf("%s: not a schema of the spec", name)
			continue
		}
		var want, got []string
		for property := range schema.Properties {
			want = append(want, property)
		}
		kind := reflect.TypeOf(value)
		for i := range kind.NumField() {
			tag, _, _ := strings.Cut(kind.Field(i).Tag.Get("json"), ",")
			if tag != "" && tag != "-" {
				got = append(got, tag)
			}
		}
		slices.Sort(want)
		slices.Sort(got)
		if name == "Event" { // kept in Extra, as stored, for ADK-Go's own type to read
			want = slices.DeleteFunc(want, func(f string) bool { return f == "usageMetadata" })
		}
		if !slices.Equal(want, got) {
			t.Errorf("%s: the spec's fields %v, the type's %v", name, want, got)
		}
	}
}
