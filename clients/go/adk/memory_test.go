package adk

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/adk/v2/memory"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"sessionary.local/sessionary"
)

// ADK-Go's own tests of its in-memory memory service, from the module cache, pass against
// MemoryService (testdata/adkmemory says how they are run): they construct the service they
// test with memory.InMemoryService(), which is the one thing changed in them.
func TestADKsOwnMemoryServiceTests(t *testing.T) {
	newClient(t)
	adkDir := strings.TrimSpace(string(goIn(t, ".")("list", "-m", "-f", "{{.Dir}}", "google.golang.org/adk/v2")))
	theirs, err := os.ReadFile(filepath.Join(adkDir, "memory", "inmemory_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	const constructor = "memory.InMemoryService()"
	if n := strings.Count(string(theirs), constructor); n != 1 {
		t.Fatalf("ADK-Go's inmemory_test.go calls %s %d times, not once", constructor, n)
	}
	ours, err := os.ReadFile("testdata/adkmemory/sessionary_test.go")
	if err != nil {
		t.Fatal(err)
	}
	run := testModule(t, "sessionary.local/adkmemorytests", map[string][]byte{
		"inmemory_test.go":   []byte(strings.Replace(string(theirs), constructor, "sessionaryMemoryService(t)", 1)),
		"sessionary_test.go": ours,
	})
	results, output := testResults(run("test", "-count=1", "-json", "."))
	var ran []string
	for test, result := range results {
		ran = append(ran, test)
		if result != "pass" {
			t.Errorf("%s: %s\n%s", test, result, output[test])
		}
	}
	slices.Sort(ran)
	const tests = "Test_inMemoryService_SearchMemory"
	want := []string{tests, tests + "/find_events", tests + "/lookup_on_empty_store", tests + "/no_leakage_for_different_appName",
		tests + "/no_leakage_for_different_user", tests + "/no_matches"}
	if !slices.Equal(ran, want) {
		t.Errorf("ADK-Go's tests ran\n%s\nnot\n%s", strings.Join(ran, "\n"), strings.Join(want, "\n"))
	}
}

// waitEmbedded waits until the server's model has embedded every memory.
func waitEmbedded(t *testing.T, client *sessionary.Client) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		status, err := client.EmbeddingsStatus(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if status.Recall != "meaning+words" {
			t.Fatalf("the server recalls by words alone: %s", *status.Note)
		}
		if status.Pending == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d memories still wait to be embedded", status.Pending)
		}
	}
}

func search(t *testing.T, service memory.Service, app, user, query string) []memory.Entry {
	t.Helper()
	found, err := service.SearchMemory(t.Context(), &memory.SearchRequest{AppName: app, UserID: user, Query: query})
	if err != nil {
		t.Fatal(err)
	}
	return found.Memories
}

func textOfEntry(entry memory.Entry) string {
	return textOf(entry.Content)
}

// A session the server holds is added by the server, what the user said in it; a search
// recalls it by meaning, with the event's author, time and id, and the app's memories beside it.
func TestAStoredSessionIsRememberedAndRecalledByMeaning(t *testing.T) {
	ctx, app := t.Context(), unique("adk-go-memory")
	client := newClient(t)
	sessions, memories := NewService(client), NewMemoryService(client)
	created, err := sessions.Create(ctx, &session.CreateRequest{AppName: app, UserID: "ada"})
	if err != nil {
		t.Fatal(err)
	}
	said := session.NewEvent(ctx, "invocation-1")
	said.Author = "user"
	said.Content = genai.NewContentFromText("I'm vegetarian.", genai.RoleUser)
	answered := session.NewEvent(ctx, "invocation-1")
	answered.Author = "chef"
	answered.Content = genai.NewContentFromText("Noted: no meat in your recipes.", genai.RoleModel)
	for _, event := range []*session.Event{said, answered} {
		if err := sessions.AppendEvent(ctx, created.Session, event); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 { // as often as one likes: each event once
		if err := memories.AddSessionToMemory(ctx, created.Session); err != nil {
			t.Fatal(err)
		}
	}
	learnt, err := client.ListMemories(ctx, app, "ada", sessionary.MemoryFilter{SessionID: created.Session.ID()})
	if err != nil {
		t.Fatal(err)
	}
	if len(learnt.Memories) != 1 || learnt.Memories[0].Kind != "event" {
		t.Fatalf("learnt %+v", learnt.Memories)
	}

	waitEmbedded(t, client)
	found := search(t, memories, app, "ada", "what food do I like?")
	if len(found) != 1 || textOfEntry(found[0]) != "I'm vegetarian." {
		t.Fatalf("recalled %+v", found)
	}
	entry := found[0]
	if entry.ID != said.ID || entry.Author != "user" || entry.Content.Role != genai.RoleUser ||
		!entry.Timestamp.Equal(said.Timestamp.Truncate(time.Microsecond)) || entry.CustomMetadata != nil {
		t.Fatalf("the user's event recalled as %+v, not as %+v", entry, said)
	}

	// The app's memories are every user's.
	if _, err := client.CreateAppMemory(ctx, app, sessionary.MemoryCreate{Text: "The kitchen closes at ten.",
		Metadata: map[string]any{"source": "staff"}}); err != nil {
		t.Fatal(err)
	}
	kitchen := search(t, memories, app, "bob", "When does the kitchen close?")
	if len(kitchen) != 1 || textOfEntry(kitchen[0]) != "The kitchen closes at ten." || kitchen[0].Author != "" ||
		kitchen[0].CustomMetadata["source"] != "staff" || kitchen[0].ID == "" {
		t.Fatalf("the app's memory recalled as %+v", kitchen)
	}
	own := NewMemoryService(client, WithRecall(sessionary.RecallQuery{IncludeApp: sessionary.Bool(false)}))
	if alone := search(t, own, app, "bob", "When does the kitchen close?"); len(alone) != 0 {
		t.Fatalf("bob's own memories %+v", alone)
	}
	if none := search(t, memories, app, "ada", "  "); none != nil {
		t.Fatalf("a query without words found %+v", none)
	}
	if long := search(t, memories, app, "ada", strings.Repeat("vegetarian ", 200)); len(long) == 0 {
		t.Fatal("a long query found nothing")
	}
}

// A session of another session service is added as ADK-Go's in-memory service adds it: every
// event with text, with its content, author, time and custom metadata, once.
func TestASessionTheServerLacksIsRememberedAsADKGoRemembersIt(t *testing.T) {
	ctx, app := t.Context(), unique("adk-go-memory")
	client := newClient(t)
	elsewhere := session.InMemoryService()
	created, err := elsewhere.Create(ctx, &session.CreateRequest{AppName: app, UserID: "ada", SessionID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	// Words between spaces, as ADK-Go's in-memory service matches them; times in microseconds,
	// as the server keeps them.
	when := time.Date(2026, 3, 1, 12, 30, 0, 500_000_000, time.UTC)
	said := session.NewEvent(ctx, "invocation-1")
	said.Author, said.Timestamp, said.CustomMetadata = "user", when, map[string]any{"channel": "sms"}
	said.Content = genai.NewContentFromText("I am allergic to peanuts", genai.RoleUser)
	call := session.NewEvent(ctx, "invocation-1")
	call.Author, call.Timestamp = "chef", when.Add(time.Second)
	call.Content = genai.NewContentFromFunctionCall("recipes", map[string]any{"without": "peanuts"}, genai.RoleModel)
	answered := session.NewEvent(ctx, "invocation-1")
	answered.Author, answered.Timestamp = "chef", when.Add(2*time.Second)
	answered.Content = genai.NewContentFromText("No peanuts in any recipe", genai.RoleModel)
	for _, event := range []*session.Event{said, call, answered} {
		if err := elsewhere.AppendEvent(ctx, created.Session, event); err != nil {
			t.Fatal(err)
		}
	}
	memories := NewMemoryService(client, WithRecall(sessionary.RecallQuery{Mode: "words"}))
	for range 2 {
		if err := memories.AddSessionToMemory(ctx, created.Session); err != nil {
			t.Fatal(err)
		}
	}
	learnt, err := client.ListMemories(ctx, app, "ada", sessionary.MemoryFilter{SessionID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(learnt.Memories) != 2 { // the function call has no text
		t.Fatalf("learnt %d memories", len(learnt.Memories))
	}
	theirs := memory.InMemoryService()
	if err := theirs.AddSessionToMemory(ctx, created.Session); err != nil {
		t.Fatal(err)
	}
	for _, query := range []string{"peanuts", "allergic", "recipe", "walnuts"} {
		got, want := search(t, memories, app, "ada", query), search(t, theirs, app, "ada", query)
		sort := func(a, b memory.Entry) int { return a.Timestamp.Compare(b.Timestamp) }
		slices.SortFunc(got, sort)
		slices.SortFunc(want, sort)
		if len(got) != len(want) {
			t.Fatalf("%q: %d entries, where ADK-Go's in-memory service finds %d", query, len(got), len(want))
		}
		for i := range got {
			g, w := got[i], want[i]
			if g.ID != w.ID || g.Author != w.Author || !g.Timestamp.Equal(w.Timestamp) || textOfEntry(g) != textOfEntry(w) ||
				g.Content.Role != w.Content.Role || len(g.CustomMetadata) != len(w.CustomMetadata) ||
				g.CustomMetadata["channel"] != w.CustomMetadata["channel"] {
				t.Errorf("%q: %+v, where ADK-Go's in-memory service: %+v", query, g, w)
			}
		}
	}
}
