package adk

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"testing"

	"google.golang.org/adk/v2/artifact"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"sessionary.local/sessionary"
)

// ADK-Go's own suite of an artifact service (testdata/adksuite says how it is run) passes but
// where it deletes one version of a name, which the server cannot: each of its two tests that
// do stops there, with the error that says so, and what they test after it is tested by
// TestTheServiceAnswersAsADKGosInMemoryOneDoes.
func TestADKsOwnArtifactServiceSuite(t *testing.T) {
	newClient(t)
	source, err := os.ReadFile("testdata/adksuite/suite_test.go")
	if err != nil {
		t.Fatal(err)
	}
	// Under a path of ADK's, which alone may import its internal suite.
	run := testModule(t, "google.golang.org/adk/v2/sessionarysuite", map[string][]byte{"suite_test.go": source})
	results, output := testResults(run("test", "-count=1", "-json", "-run", "TestArtifactServiceSuite", "."))
	const suite = "TestArtifactServiceSuite/"
	stops := map[string]string{
		suite + "TestSessionaryArtifactService":            "Delete(file1@v3) failed: deleting version 3 of file1 alone",
		suite + "TestSessionaryArtifactService_UserScoped": "Delete(user:file1@v3) failed: deleting version 3 of user:file1 alone",
	}
	for test, message := range stops {
		if results[test] != "fail" || !strings.Contains(output[test], message) || !strings.Contains(output[test], "unsupported operation") {
			t.Errorf("%s: %s, not stopped at the delete of one version:\n%s", test, results[test], output[test])
		}
	}
	var passed []string
	for test, result := range results {
		switch {
		case result == "pass":
			passed = append(passed, strings.TrimPrefix(test, suite))
		case stops[test] == "" && test != "TestArtifactServiceSuite":
			t.Errorf("%s: %s\n%s", test, result, output[test])
		}
	}
	slices.Sort(passed)
	want := []string{
		"TestSessionaryArtifactService/List_Sessionary", "TestSessionaryArtifactService/Load_Sessionary",
		"TestSessionaryArtifactService/Versions_Sessionary",
		"TestSessionaryArtifactService_Empty", "TestSessionaryArtifactService_Empty/Delete_Sessionary",
		"TestSessionaryArtifactService_Empty/List_Sessionary", "TestSessionaryArtifactService_Empty/Load_Sessionary",
		"TestSessionaryArtifactService_Empty/Versions_Sessionary",
		"TestSessionaryArtifactService_UserScoped/List_Sessionary", "TestSessionaryArtifactService_UserScoped/Load_Sessionary",
		"TestSessionaryArtifactService_UserScoped/Versions_Sessionary",
	}
	if !slices.Equal(passed, want) {
		t.Errorf("ADK-Go's suite passed\n%s\nnot\n%s", strings.Join(passed, "\n"), strings.Join(want, "\n"))
	}
}

// describe is what an answer of an artifact service says, to compare two services': a Part by
// its content, an error by whether it is fs.ErrNotExist (else by its text).
func describe(answer any, err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "not there"
	case err != nil:
		return "error: " + err.Error()
	}
	switch got := answer.(type) {
	case *artifact.SaveResponse:
		return fmt.Sprint("saved ", got.Version)
	case *artifact.LoadResponse:
		part := got.Part
		if part.InlineData != nil {
			return fmt.Sprintf("bytes %q %s %q", part.InlineData.Data, part.InlineData.MIMEType, part.InlineData.DisplayName)
		}
		return fmt.Sprintf("text %q", part.Text)
	case *artifact.ListResponse:
		return fmt.Sprint("names ", got.FileNames)
	case *artifact.VersionsResponse:
		versions := slices.Sorted(slices.Values(got.Versions)) // in-memory's are newest first
		return fmt.Sprint("versions ", versions)
	case *artifact.GetArtifactVersionResponse:
		return fmt.Sprint("version ", got.ArtifactVersion.Version, " ", got.ArtifactVersion.MimeType)
	}
	return fmt.Sprint(answer)
}

// The same calls, to ADK-Go's in-memory service and to this one, are answered alike: saves
// and loads of bytes and text, versions, a session's names and its user's, deletes, and what
// is not there. (Each session is made first: Sessionary keeps artifacts with their session.)
func TestTheServiceAnswersAsADKGosInMemoryOneDoes(t *testing.T) {
	ctx, app := t.Context(), unique("adk-go-artifacts")
	client := newClient(t)
	for _, id := range []string{"s1", "s2"} {
		if _, err := client.CreateSession(ctx, app, "ada", sessionary.SessionCreate{SessionID: id}); err != nil {
			t.Fatal(err)
		}
	}
	png := []byte{0x89, 'P', 'N', 'G', 0, 1, 2}
	avatar := &genai.Part{InlineData: &genai.Blob{Data: png, MIMEType: "image/png", DisplayName: "Avatar"}}
	type call func(artifact.Service) (any, error)
	save := func(session, name string, part *genai.Part) call {
		return func(s artifact.Service) (any, error) {
			return s.Save(ctx, &artifact.SaveRequest{AppName: app, UserID: "ada", SessionID: session, FileName: name, Part: part})
		}
	}
	load := func(session, name string, version int64) call {
		return func(s artifact.Service) (any, error) {
			return s.Load(ctx, &artifact.LoadRequest{AppName: app, UserID: "ada", SessionID: session, FileName: name, Version: version})
		}
	}
	list := func(session string) call {
		return func(s artifact.Service) (any, error) {
			return s.List(ctx, &artifact.ListRequest{AppName: app, UserID: "ada", SessionID: session})
		}
	}
	versions := func(session, name string) call {
		return func(s artifact.Service) (any, error) {
			return s.Versions(ctx, &artifact.VersionsRequest{AppName: app, UserID: "ada", SessionID: session, FileName: name})
		}
	}
	record := func(session, name string, version int64) call {
		return func(s artifact.Service) (any, error) {
			return s.GetArtifactVersion(ctx, &artifact.GetArtifactVersionRequest{AppName: app, UserID: "ada",
				SessionID: session, FileName: name, Version: version})
		}
	}
	remove := func(session, name string) call {
		return func(s artifact.Service) (any, error) {
			return nil, s.Delete(ctx, &artifact.DeleteRequest{AppName: app, UserID: "ada", SessionID: session, FileName: name})
		}
	}
	calls := []call{
		save("s1", "report.txt", genai.NewPartFromBytes([]byte("v1"), "text/plain")),
		save("s1", "report.txt", genai.NewPartFromBytes([]byte("v2"), "text/plain")),
		save("s1", "notes", genai.NewPartFromText("Oslo, then Bergen.")),
		save("s1", "user:avatar.png", avatar),
		save("s2", "user:avatar.png", genai.NewPartFromBytes([]byte("v2 of the avatar"), "image/png")),
		save("s2", "draft", genai.NewPartFromText("")),
		save("s2", "draft", genai.NewPartFromText("x")),
		save("s1", "a/b.txt", genai.NewPartFromText("x")),
		load("s1", "report.txt", 0), load("s1", "report.txt", 1), load("s1", "report.txt", 2),
		load("s1", "report.txt", 3), load("s1", "notes", 0), load("s2", "user:avatar.png", 1),
		load("nowhere", "user:avatar.png", 0), load("s1", "draft", 0), load("s2", "draft", 0), load("", "notes", 0),
		list("s1"), list("s2"), list("nowhere"),
		versions("s1", "report.txt"), versions("s2", "user:avatar.png"), versions("s1", "nothing"),
		record("s1", "report.txt", 0), record("s1", "report.txt", 1), record("s1", "notes", 0),
		record("s1", "user:avatar.png", 1), record("s1", "report.txt", 7), record("nowhere", "notes", 0),
		remove("s1", "report.txt"), load("s1", "report.txt", 0), versions("s1", "report.txt"),
		record("s1", "report.txt", 0), list("s1"),
		remove("s1", "report.txt"), remove("nowhere", "report.txt"), remove("s1", "a/b"),
		save("s1", "report.txt", genai.NewPartFromBytes([]byte("v1 again"), "text/plain")), load("s1", "report.txt", 1),
		remove("s2", "user:avatar.png"), list("s1"), load("s1", "user:avatar.png", 0),
	}
	ours, theirs := NewArtifactService(client), artifact.InMemoryService()
	for i, call := range calls {
		got, want := describe(call(ours)), describe(call(theirs))
		if got != want {
			t.Errorf("call %d: %s, where ADK-Go's in-memory service: %s", i, got, want)
		}
	}
}

// An ADK-Go agent's events name the versions it saved as ADK-Go counts them; stored as the
// server counts them, the server's rewind restores the version the events named then.
func TestTheServersRewindRestoresTheVersionsAnADKGoAgentSaved(t *testing.T) {
	ctx, app := t.Context(), unique("adk-go-artifacts")
	client := newClient(t)
	sessions, artifacts := NewService(client), NewArtifactService(client)
	created, err := sessions.Create(ctx, &session.CreateRequest{AppName: app, UserID: "ada"})
	if err != nil {
		t.Fatal(err)
	}
	id := created.Session.ID()
	for _, turn := range []struct{ invocation, plan string }{{"i1", "Oslo"}, {"i2", "Bergen"}} {
		saved, err := artifacts.Save(ctx, &artifact.SaveRequest{AppName: app, UserID: "ada", SessionID: id,
			FileName: "plan.txt", Part: genai.NewPartFromText(turn.plan)})
		if err != nil {
			t.Fatal(err)
		}
		event := session.NewEvent(ctx, turn.invocation)
		event.Author = "planner"
		event.Actions.ArtifactDelta = map[string]int64{"plan.txt": saved.Version}
		if err := sessions.AppendEvent(ctx, created.Session, event); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := client.Rewind(ctx, app, "ada", id, sessionary.SessionRewind{BeforeInvocationID: "i2"}); err != nil {
		t.Fatal(err)
	}
	loaded, err := artifacts.Load(ctx, &artifact.LoadRequest{AppName: app, UserID: "ada", SessionID: id, FileName: "plan.txt"})
	if err != nil || loaded.Part.Text != "Oslo" {
		t.Fatalf("the plan after the rewind: %v, %v", loaded, err)
	}
	got, err := sessions.Get(ctx, &session.GetRequest{AppName: app, UserID: "ada", SessionID: id})
	if err != nil {
		t.Fatal(err)
	}
	rewind := got.Session.Events().At(got.Session.Events().Len() - 1)
	if delta := rewind.Actions.ArtifactDelta; delta["plan.txt"] != 3 {
		t.Fatalf("the rewind's artifactDelta %v: not version 3, ADK-Go's count", delta)
	}
	third, err := artifacts.Load(ctx, &artifact.LoadRequest{AppName: app, UserID: "ada", SessionID: id, FileName: "plan.txt", Version: 3})
	if err != nil || third.Part.Text != "Oslo" {
		t.Fatalf("version 3: %v, %v", third, err)
	}
}
