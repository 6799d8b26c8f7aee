package sessionary

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"testing"
)

// A user's export and its import under another user, against a live server (keys off).

func TestAUserExportedIsImportedUnderAnother(t *testing.T) {
	ctx := context.Background()
	c, app := client(t, Options{}), unique("go-user-export")
	must[*Session](t)(c.CreateSession(ctx, app, "ada", SessionCreate{SessionID: "chat",
		Events: []Event{{ID: "e1", Author: "user", InvocationID: "inv-1", Timestamp: 1}}}))
	must[*Memory](t)(c.CreateMemory(ctx, app, "ada", MemoryCreate{ID: "tea", Text: "Ada takes her tea black."}))
	must[State](t)(c.UpdateUserState(ctx, app, "ada", State{"units": "metric"}))

	// The export, streamed, is read by the import as it arrives.
	export := must[io.ReadCloser](t)(c.ExportUser(ctx, app, "ada"))
	imported := must[*UserImport](t)(c.ImportUser(ctx, app, "bob", export))
	export.Close()
	counts := UserImportCounts{Sessions: 1, Events: 1, Memories: 1}
	if *imported != (UserImport{Created: counts, UserStateKeys: 1}) {
		t.Fatalf("imported %+v", imported)
	}

	session := must[*Session](t)(c.GetSession(ctx, app, "bob", "chat", SessionRead{}))
	if session.UserID != "bob" || len(session.Events) != 1 || session.Events[0].ID != "e1" {
		t.Fatalf("the session imported %+v", session)
	}
	if memory := must[*Memory](t)(c.GetMemory(ctx, app, "bob", "tea")); memory.Text == nil || *memory.Text != "Ada takes her tea black." {
		t.Fatalf("the memory imported %+v", memory)
	}
	if state := must[State](t)(c.UserState(ctx, app, "bob")); state["units"] != "metric" {
		t.Fatalf("the user's state imported %v", state)
	}

	// Read whole, it is NDJSON; the same export again creates nothing.
	ndjson := must[[]byte](t)(readAll(c.ExportUser(ctx, app, "ada")))
	var formats []string
	for lines := bufio.NewScanner(bytes.NewReader(ndjson)); lines.Scan(); {
		var line struct{ Format string }
		if err := json.Unmarshal(lines.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		formats = append(formats, line.Format)
	}
	if want := []string{"sessionary.userState.v1", "sessionary.session.v1", "", "sessionary.memory.v1"}; !slices.Equal(formats, want) {
		t.Fatalf("the export's lines %q", formats)
	}
	again := must[*UserImport](t)(c.ImportUser(ctx, app, "bob", bytes.NewReader(ndjson)))
	if *again != (UserImport{Unchanged: counts, UserStateKeys: 1}) {
		t.Fatalf("imported again %+v", again)
	}
	if nothing := must[[]byte](t)(readAll(c.ExportUser(ctx, app, "nobody"))); len(nothing) != 0 {
		t.Fatalf("a user with nothing exports %q", nothing)
	}

	// The same session id, different (an event more): nothing is imported.
	must[*Event](t)(c.AppendEvent(ctx, app, "ada", "chat", said("user", "More.")))
	changed := must[[]byte](t)(readAll(c.ExportUser(ctx, app, "ada")))
	if _, err := c.ImportUser(ctx, app, "bob", bytes.NewReader(changed)); !errors.Is(err, ErrSessionAlreadyExists) {
		t.Fatalf("a different session under a taken id: %v", err)
	}
}

// readAll reads an export whole, and closes it.
func readAll(export io.ReadCloser, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	defer export.Close()
	return io.ReadAll(export)
}
