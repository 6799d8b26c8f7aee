package adk

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/session/sessiontestsuite"
	"google.golang.org/adk/v2/tool/toolconfirmation"
	"google.golang.org/genai"

	"sessionary.local/sessionary"
)

// Against a live server at SESSIONARY_URL (`make test` starts one); skipped without it.
func newClient(t *testing.T) *sessionary.Client {
	t.Helper()
	if os.Getenv("SESSIONARY_URL") == "" {
		t.Skip("SESSIONARY_URL is not set: no server to test against")
	}
	client, err := sessionary.New(sessionary.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return client
}

func unique(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:])
}

// ADK-Go's own tests of a session service, as its in-memory and database services run them.
// Each setup starts from an app without sessions, as theirs start from an empty store.
func TestADKsOwnSessionServiceSuite(t *testing.T) {
	client := newClient(t)
	app := unique("adk-go")
	sessiontestsuite.RunServiceTests(t, sessiontestsuite.SuiteOptions{
		SupportsUserProvidedSessionID: true,
		AppName:                       app,
	}, func(t *testing.T) session.Service {
		for found, err := range client.AppSessions(t.Context(), app, sessionary.SessionFilter{}) {
			if err != nil {
				t.Fatal(err)
			}
			if err := client.DeleteSession(t.Context(), app, found.UserID, found.ID); err != nil {
				t.Fatal(err)
			}
		}
		return NewService(client)
	})
}

func TestAnAppendToASessionWrittenElsewhereIsStale(t *testing.T) {
	ctx, app := t.Context(), unique("adk-go")
	here, there := NewService(newClient(t)), NewService(newClient(t))
	created, err := here.Create(ctx, &session.CreateRequest{AppName: app, UserID: "ada", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := there.Get(ctx, &session.GetRequest{AppName: app, UserID: "ada", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if err := there.AppendEvent(ctx, loaded.Session, session.NewEvent(ctx, "i1")); err != nil {
		t.Fatal(err)
	}
	err = here.AppendEvent(ctx, created.Session, session.NewEvent(ctx, "i2"))
	if !errors.Is(err, sessionary.ErrStaleSession) {
		t.Fatalf("an append to a stale session: %v", err)
	}
	// Read again, it appends.
	reloaded, err := here.Get(ctx, &session.GetRequest{AppName: app, UserID: "ada", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if err := here.AppendEvent(ctx, reloaded.Session, session.NewEvent(ctx, "i2")); err != nil {
		t.Fatal(err)
	}
	if reloaded.Session.Events().Len() != 2 {
		t.Fatalf("%d events", reloaded.Session.Events().Len())
	}
}

func TestTempKeysReachTheLiveSessionAndNeverTheStore(t *testing.T) {
	ctx, app := t.Context(), unique("adk-go")
	service := NewService(newClient(t))
	created, err := service.Create(ctx, &session.CreateRequest{AppName: app, UserID: "ada"})
	if err != nil {
		t.Fatal(err)
	}
	event := session.NewEvent(ctx, "i1")
	event.Actions.StateDelta = map[string]any{"temp:scratch": "x", "kept": "y"}
	if err := service.AppendEvent(ctx, created.Session, event); err != nil {
		t.Fatal(err)
	}
	if value, err := created.Session.State().Get("temp:scratch"); err != nil || value != "x" {
		t.Fatalf("the live session's temp:scratch: %v, %v", value, err)
	}
	if _, stripped := event.Actions.StateDelta["temp:scratch"]; stripped {
		t.Fatal("the event kept its temp: key")
	}
	got, err := service.Get(ctx, &session.GetRequest{AppName: app, UserID: "ada", SessionID: created.Session.ID()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := got.Session.State().Get("temp:scratch"); !errors.Is(err, session.ErrStateKeyNotExist) {
		t.Fatalf("temp:scratch was stored: %v", err)
	}
	stored := got.Session.Events().At(0)
	if _, kept := stored.Actions.StateDelta["temp:scratch"]; kept || stored.Actions.StateDelta["kept"] != "y" {
		t.Fatalf("the stored delta %v", stored.Actions.StateDelta)
	}
}

// An event as ADK's Python agents store it (camelCase JSON) reads as ADK-Go's, and back.
func TestEventsAreStoredAsADKsPythonAgentsStoreThem(t *testing.T) {
	ctx, app := t.Context(), unique("adk-go")
	client := newClient(t)
	python := sessionary.Event{ID: "e1", Author: "weather_agent", InvocationID: "inv", Timestamp: 1735689600.5,
		Content: sessionary.Text("model", "Sunny."), Actions: &sessionary.EventActions{StateDelta: sessionary.State{"z": 1.0}}}
	python.Extra = map[string]json.RawMessage{"turnComplete": json.RawMessage("true"), "branch": json.RawMessage(`"root.weather"`)}
	if _, err := client.CreateSession(ctx, app, "ada", sessionary.SessionCreate{SessionID: "s", Events: []sessionary.Event{python}}); err != nil {
		t.Fatal(err)
	}
	got, err := NewService(client).Get(ctx, &session.GetRequest{AppName: app, UserID: "ada", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	event := got.Session.Events().At(0)
	want := time.Date(2025, 1, 1, 0, 0, 0, 500_000_000, time.UTC)
	if event.Content.Parts[0].Text != "Sunny." || event.Content.Role != genai.RoleModel || !event.TurnComplete ||
		event.Branch != "root.weather" || !event.Timestamp.Equal(want) || event.Actions.StateDelta["z"] != 1.0 {
		t.Fatalf("read %+v", event)
	}
}

// An ADK-Go event is stored with every field it has and read back as it was, in the camelCase
// JSON that ADK's Python agents write (whose events forbid fields they lack: none is sent
// zero).
func TestAnEventIsStoredWithEveryFieldAndReadBackAsItWas(t *testing.T) {
	event := &session.Event{
		LLMResponse: model.LLMResponse{
			Content:             genai.NewContentFromText("Sunny.", genai.RoleModel),
			CitationMetadata:    &genai.CitationMetadata{Citations: []*genai.Citation{{Title: "met.no", URI: "https://met.no"}}},
			GroundingMetadata:   &genai.GroundingMetadata{WebSearchQueries: []string{"oslo weather"}},
			UsageMetadata:       &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: 1, TotalTokenCount: 3},
			CustomMetadata:      map[string]any{"source": "test"},
			LogprobsResult:      &genai.LogprobsResult{ChosenCandidates: []*genai.LogprobsResultCandidate{{Token: "Sunny"}}},
			InputTranscription:  &genai.Transcription{Text: "Oslo?"},
			OutputTranscription: &genai.Transcription{Text: "Sunny.", Finished: true},
			ModelVersion:        "gemini-2.5", Partial: true, TurnComplete: true, Interrupted: true,
			SessionResumptionHandle: "handle", ErrorCode: "code", ErrorMessage: "message",
			FinishReason: genai.FinishReasonStop, AvgLogprobs: -0.25,
		},
		ID: "e1", Timestamp: time.Date(2025, 1, 1, 0, 0, 0, 500_000_000, time.UTC), InvocationID: "inv",
		Branch: "root.weather", IsolationScope: "scope", Author: "weather_agent",
		Actions: session.EventActions{
			StateDelta: map[string]any{"city": "Oslo"}, ArtifactDelta: map[string]int64{"map.png": 2},
			RequestedToolConfirmations: map[string]toolconfirmation.ToolConfirmation{"c1": {Hint: "sure?", Confirmed: true}},
			SkipSummarization:          true, TransferToAgent: "planner", Escalate: true,
		},
		LongRunningToolIDs: []string{"c1"}, Routes: []string{"next"},
		RequestedInput: &session.RequestInput{InterruptID: "i1", Message: "Which city?"}, Output: "done",
		NodeInfo: &session.NodeInfo{Path: "trip/forecast", OutputFor: []string{"trip"}},
	}
	// A field ADK-Go adds is tested once it is set here.
	everyFieldSet(t, reflect.ValueOf(*event))
	sent, err := toWire(event)
	if err != nil {
		t.Fatal(err)
	}
	var stored struct {
		Fields  map[string]json.RawMessage
		Actions map[string]json.RawMessage
	}
	data, _ := json.Marshal(sent)
	_ = json.Unmarshal(data, &stored.Fields)
	_ = json.Unmarshal(stored.Fields["actions"], &stored.Actions)
	for _, names := range []map[string]json.RawMessage{stored.Fields, stored.Actions} {
		for name := range names {
			if strings.ToLower(name[:1]) != name[:1] || strings.Contains(name, "ID") {
				t.Errorf("stored as %q, not in camelCase", name)
			}
		}
	}
	for _, name := range []string{"invocationId", "longRunningToolIds", "turnComplete", "usageMetadata"} {
		if _, ok := stored.Fields[name]; !ok {
			t.Errorf("no %q in %s", name, data)
		}
	}
	if string(stored.Fields["timestamp"]) != "1735689600.5" || string(stored.Actions["stateDelta"]) != `{"city":"Oslo"}` {
		t.Errorf("stored %s", data)
	}
	// ADK-Go's version 2 of an artifact is the server's (and ADK's Python agents') version 1.
	if string(stored.Actions["artifactDelta"]) != `{"map.png":1}` {
		t.Errorf("artifactDelta stored as %s", stored.Actions["artifactDelta"])
	}
	read, err := fromWireEvent(sent)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(read, event) {
		got, _ := json.Marshal(read)
		want, _ := json.Marshal(event)
		t.Fatalf("read back\n%s\nnot\n%s", got, want)
	}

	bare, err := toWire(&session.Event{ID: "e2"})
	if data, _ := json.Marshal(bare); err != nil || string(data) != `{"id":"e2","timestamp":-62135596800}` {
		t.Fatalf("a bare event is stored as %s (%v)", data, err)
	}
}

func everyFieldSet(t *testing.T, v reflect.Value) {
	t.Helper()
	for i := range v.NumField() {
		field := v.Type().Field(i)
		if v.Field(i).IsZero() {
			t.Errorf("%s.%s is not set", v.Type().Name(), field.Name)
		}
		if field.Anonymous || field.Type == reflect.TypeFor[session.EventActions]() {
			everyFieldSet(t, v.Field(i))
		}
	}
}
