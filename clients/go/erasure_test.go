package sessionary

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// Erasing a user, or an app, against a live server, which runs with keys off: anyone may erase.

func TestAnErasedUserHasNothingLeftAndTheirErasureIsRead(t *testing.T) {
	ctx := context.Background()
	c, app := client(t, Options{}), unique("go-erase")
	started := float64(time.Now().UnixMicro()) / 1e6
	session := must[*Session](t)(c.CreateSession(ctx, app, "ada", SessionCreate{}))
	must[*Event](t)(c.AppendEvent(ctx, app, "ada", session.ID, said("user", "Forget me."), IfMatch(session.Version)))
	kept := must[*Session](t)(c.CreateSession(ctx, app, "bob", SessionCreate{}))
	adas := must[string](t)(pathTo("/sessions/", app, "ada"))
	if _, ok := c.written.at[sessionPathOf(app, "ada", session.ID)]; !ok {
		t.Fatalf("no version of the session written: %v", c.written.at)
	}

	erased := must[*Erasure](t)(c.EraseUser(ctx, app, "ada"))
	if erased.Status != "done" || erased.Removed["sessions"] != 1 || erased.Removed["events"] < 1 ||
		erased.ID == "" || erased.AppName != app || erased.UserID != "ada" || erased.DeletedKeyIDs == nil ||
		erased.FinishTime == nil || math.Abs(erased.CreateTime-started) > 60 ||
		erased.UpdateTime < erased.CreateTime || *erased.FinishTime < erased.CreateTime {
		t.Fatalf("erased %+v", erased)
	}
	// The client reads the user's sessions at no version it wrote before: they are gone.
	for known := range c.written.at {
		if strings.HasPrefix(known, adas) {
			t.Errorf("a version of %s is kept", known)
		}
	}

	_, err := c.GetSession(ctx, app, "ada", session.ID, SessionRead{})
	if !errors.Is(err, ErrSessionNotFound) || !errors.Is(err, ErrNotFound) {
		t.Fatalf("the erased user's session: %v", err)
	}
	// Another user of the app keeps theirs.
	must[*Session](t)(c.GetSession(ctx, app, "bob", kept.ID, SessionRead{}))

	read := must[*Erasure](t)(c.GetErasure(ctx, app, "ada"))
	if read.ID != erased.ID || read.Status != "done" || read.Removed["sessions"] != 1 || read.UserID != "ada" {
		t.Fatalf("read %+v, erased %+v", read, erased)
	}
}

func TestANeverErasedUserHasNoErasure(t *testing.T) {
	ctx := context.Background()
	c, app := client(t, Options{}), unique("go-erase")
	must[*Session](t)(c.CreateSession(ctx, app, "ada", SessionCreate{}))
	_, err := c.GetErasure(ctx, app, "ada")
	var answer *APIError
	if !errors.Is(err, ErrErasureNotFound) || !errors.Is(err, ErrNotFound) || !errors.As(err, &answer) ||
		answer.Status != 404 || answer.Code() != "erasure_not_found" {
		t.Fatalf("a user never erased: %v", err)
	}
}

func TestAnErasedAppHasNothingLeftAndItsErasureIsRead(t *testing.T) {
	ctx := context.Background()
	c, app := client(t, Options{}), unique("go-erase-app")
	if _, err := c.GetAppErasure(ctx, app); !errors.Is(err, ErrErasureNotFound) {
		t.Fatalf("an app never erased: %v", err)
	}
	session := must[*Session](t)(c.CreateSession(ctx, app, "ada", SessionCreate{}))
	must[*Event](t)(c.AppendEvent(ctx, app, "ada", session.ID, said("user", "Forget us."), IfMatch(session.Version)))
	other := must[*Session](t)(c.CreateSession(ctx, app, "bob", SessionCreate{}))
	must[State](t)(c.UpdateAppState(ctx, app, State{"banner": "hi"}))

	erased := must[*AppErasure](t)(c.EraseApp(ctx, app))
	if erased.Status != "done" || erased.AppName != app || erased.Removed["sessions"] != 2 ||
		erased.Removed["appStates"] != 1 || erased.FinishTime == nil || *erased.FinishTime < erased.CreateTime {
		t.Fatalf("erased %+v", erased)
	}
	for known := range c.written.at {
		if strings.HasPrefix(known, "/apps/"+app+"/") {
			t.Errorf("a version of %s is kept", known)
		}
	}
	for _, id := range []string{session.ID, other.ID} {
		for _, user := range []string{"ada", "bob"} {
			if _, err := c.GetSession(ctx, app, user, id, SessionRead{}); !errors.Is(err, ErrSessionNotFound) {
				t.Fatalf("a session of the erased app: %v", err)
			}
		}
	}
	if state := must[State](t)(c.AppState(ctx, app)); len(state) != 0 {
		t.Fatalf("the erased app's state: %v", state)
	}
	read := must[*AppErasure](t)(c.GetAppErasure(ctx, app))
	if read.ID != erased.ID || read.Status != "done" || read.Removed["sessions"] != 2 {
		t.Fatalf("read %+v, erased %+v", read, erased)
	}
}
