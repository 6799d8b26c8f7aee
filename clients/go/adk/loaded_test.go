package adk

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/adk/v2/session"

	"sessionary.local/sessionary"
)

// A turn's load of a long session costs what is new: the service keeps the events it read,
// asks the server for the newest only, and reads the session whole again unless appends alone
// came since. Every load is checked against a service that keeps nothing.

const user = "ada"

// counting sends a client's requests, noting each read of a session: its numRecentEvents, ""
// for a whole read.
type counting struct {
	mu    sync.Mutex
	asked []string
}

func (c *counting) RoundTrip(r *http.Request) (*http.Response, error) {
	_, rest, _ := strings.Cut(r.URL.Path, "/sessions/")
	if r.Method == http.MethodGet && rest != "" && !strings.ContainsAny(rest, "/:") {
		c.mu.Lock()
		c.asked = append(c.asked, r.URL.Query().Get("numRecentEvents"))
		c.mu.Unlock()
	}
	return http.DefaultTransport.RoundTrip(r)
}

// reads is what the reads since the last call asked for.
func (c *counting) reads() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	asked := c.asked
	c.asked = nil
	return asked
}

func countingService(t *testing.T, options ...Option) (*Service, *counting) {
	t.Helper()
	newClient(t) // skips without a server
	reads := &counting{}
	client, err := sessionary.New(sessionary.Options{HTTPClient: &http.Client{Transport: reads}})
	if err != nil {
		t.Fatal(err)
	}
	return NewService(client, options...), reads
}

func said(n int) sessionary.Event {
	return sessionary.Event{Author: "agent", InvocationID: "inv",
		Actions: &sessionary.EventActions{StateDelta: sessionary.State{"n": float64(n)}}}
}

func appendSaid(t *testing.T, client *sessionary.Client, app, id string, from, to int) []sessionary.Event {
	t.Helper()
	var events []sessionary.Event
	for n := from; n < to; n++ {
		events = append(events, said(n))
	}
	stored, err := client.AppendEvents(t.Context(), app, user, id, events)
	if err != nil {
		t.Fatal(err)
	}
	return stored
}

func load(t *testing.T, service *Service, app, id string) session.Session {
	t.Helper()
	got, err := service.Get(t.Context(), &session.GetRequest{AppName: app, UserID: user, SessionID: id})
	if err != nil {
		t.Fatal(err)
	}
	return got.Session
}

// view is all a session.Session shows.
type view struct {
	ID, AppName, UserID string
	State               map[string]any
	Events              []*session.Event
	LastUpdateTime      string
	Version             int64
}

func viewOf(s session.Session) view {
	return view{ID: s.ID(), AppName: s.AppName(), UserID: s.UserID(), State: stateOf(s.State()),
		Events: slices.Collect(s.Events().All()), LastUpdateTime: s.LastUpdateTime().String(),
		Version: s.(*Session).Version()}
}

func stateOf(state session.State) map[string]any {
	all := map[string]any{}
	for key, value := range state.All() {
		all[key] = value
	}
	return all
}

func sameAsAFreshRead(t *testing.T, got session.Session) {
	t.Helper()
	truth := load(t, NewService(newClient(t), WithCachedEvents(0)), got.AppName(), got.ID())
	if want, have := viewOf(truth), viewOf(got); !reflect.DeepEqual(want, have) {
		wanted, _ := json.Marshal(want)
		had, _ := json.Marshal(have)
		t.Fatalf("the load is not the session:\n%s\nnot\n%s", had, wanted)
	}
}

func asked(t *testing.T, reads *counting, want ...string) {
	t.Helper()
	if got := reads.reads(); !slices.Equal(got, want) {
		t.Fatalf("the reads asked for %q events, not %q", got, want)
	}
}

func TestALoadAfterAppendsAsksOnlyForTheNewestEvents(t *testing.T) {
	ctx, app := t.Context(), unique("adk-go")
	here, reads := countingService(t)
	there, client := NewService(newClient(t)), newClient(t)
	if _, err := here.Create(ctx, &session.CreateRequest{AppName: app, UserID: user, SessionID: "long"}); err != nil {
		t.Fatal(err)
	}
	appendSaid(t, client, app, "long", 0, 80)
	reads.reads()
	loaded := load(t, here, app, "long")
	for turn := range 3 {
		// A turn: the runner appends to the session it loaded, another process appends, and
		// the next turn loads the session.
		event := session.NewEvent(ctx, "turn")
		event.Author = "agent"
		event.Actions.StateDelta = map[string]any{"turn": float64(turn)}
		if err := here.AppendEvent(ctx, loaded, event); err != nil {
			t.Fatal(err)
		}
		elsewhere := load(t, there, app, "long")
		if err := there.AppendEvent(ctx, elsewhere, session.NewEvent(ctx, "elsewhere")); err != nil {
			t.Fatal(err)
		}
		loaded = load(t, here, app, "long")
		sameAsAFreshRead(t, loaded)
	}
	asked(t, reads, "", "32", "32", "32")
	if loaded.Events().Len() != 86 {
		t.Fatalf("%d events", loaded.Events().Len())
	}
}

// After any write but appends, the load reads the session whole, and is the session exactly.
func TestALoadAfterAnyOtherWriteIsTheSession(t *testing.T) {
	changes := map[string]func(t *testing.T, client *sessionary.Client, app string, stored []sessionary.Event){
		"remove": func(t *testing.T, client *sessionary.Client, app string, stored []sessionary.Event) {
			_, err := client.RemoveEvent(t.Context(), app, user, "s", stored[1].ID)
			check(t, err)
		},
		"rewrite": func(t *testing.T, client *sessionary.Client, app string, stored []sessionary.Event) {
			_, err := client.RewriteEvent(t.Context(), app, user, "s", stored[1].ID, *sessionary.Text("model", "x"))
			check(t, err)
		},
		"trim": func(t *testing.T, client *sessionary.Client, app string, _ []sessionary.Event) {
			_, err := client.Trim(t.Context(), app, user, "s", sessionary.SessionTrim{KeepLast: 2})
			check(t, err)
		},
		"reset": func(t *testing.T, client *sessionary.Client, app string, _ []sessionary.Event) {
			_, err := client.Reset(t.Context(), app, user, "s")
			check(t, err)
		},
		"close": func(t *testing.T, client *sessionary.Client, app string, _ []sessionary.Event) {
			_, err := client.CloseSession(t.Context(), app, user, "s", sessionary.SessionClose{Outcome: "completed"})
			check(t, err)
		},
		// Deleted, and made again under its id with more events than it had, so that only its
		// creation time tells it from the session kept.
		"recreate": func(t *testing.T, client *sessionary.Client, app string, _ []sessionary.Event) {
			check(t, client.DeleteSession(t.Context(), app, user, "s"))
			_, err := client.CreateSession(t.Context(), app, user, sessionary.SessionCreate{SessionID: "s"})
			check(t, err)
			appendSaid(t, client, app, "s", 10, 16)
		},
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			service, reads := countingService(t)
			client, app := newClient(t), unique("adk-go")
			_, err := client.CreateSession(t.Context(), app, user, sessionary.SessionCreate{SessionID: "s"})
			check(t, err)
			stored := appendSaid(t, client, app, "s", 0, 5)
			load(t, service, app, "s")
			change(t, client, app, stored)
			sameAsAFreshRead(t, load(t, service, app, "s"))
			asked(t, reads, "", "32", "")
		})
	}
}

func TestALoadAfterMoreAppendsThanItAsksForIsTheSession(t *testing.T) {
	service, reads := countingService(t)
	client, app := newClient(t), unique("adk-go")
	_, err := client.CreateSession(t.Context(), app, user, sessionary.SessionCreate{SessionID: "s"})
	check(t, err)
	appendSaid(t, client, app, "s", 0, 10)
	load(t, service, app, "s")
	appendSaid(t, client, app, "s", 10, 10+recent+1)
	loaded := load(t, service, app, "s")
	sameAsAFreshRead(t, loaded)
	asked(t, reads, "", "32", "")
	if loaded.Events().Len() != 10+recent+1 {
		t.Fatalf("%d events", loaded.Events().Len())
	}
}

// The app's and the user's state are read each time, with the newest events.
func TestALoadHasTheAppsAndTheUsersStateAsTheyAre(t *testing.T) {
	service, reads := countingService(t)
	client, app := newClient(t), unique("adk-go")
	_, err := client.CreateSession(t.Context(), app, user, sessionary.SessionCreate{SessionID: "s"})
	check(t, err)
	appendSaid(t, client, app, "s", 0, 3)
	load(t, service, app, "s")
	_, err = client.UpdateAppState(t.Context(), app, sessionary.State{"greeting": "hi"})
	check(t, err)
	_, err = client.UpdateUserState(t.Context(), app, user, sessionary.State{"name": "Ada"})
	check(t, err)
	loaded := load(t, service, app, "s")
	sameAsAFreshRead(t, loaded)
	asked(t, reads, "", "32")
	if name, _ := loaded.State().Get("user:name"); name != "Ada" {
		t.Fatalf("user:name is %v", name)
	}
}

// What a holder of a loaded session does to it (its state set, events appended, one of them
// refused as stale) reaches neither the next load nor the sessions loaded before.
func TestChangingALoadedSessionChangesNoOtherLoad(t *testing.T) {
	ctx, app := t.Context(), unique("adk-go")
	service, _ := countingService(t)
	client := newClient(t)
	_, err := client.CreateSession(ctx, app, user, sessionary.SessionCreate{SessionID: "s"})
	check(t, err)
	appendSaid(t, client, app, "s", 0, 5)
	first := load(t, service, app, "s")
	check(t, first.State().Set("scratch", "mine"))
	check(t, service.AppendEvent(ctx, first, session.NewEvent(ctx, "first")))
	second := load(t, service, app, "s")
	sameAsAFreshRead(t, second)
	appendSaid(t, client, app, "s", 5, 6) // the second is stale now
	if err := service.AppendEvent(ctx, second, session.NewEvent(ctx, "refused")); !errors.Is(err, sessionary.ErrStaleSession) {
		t.Fatalf("an append to a stale session: %v", err)
	}
	third := load(t, service, app, "s")
	sameAsAFreshRead(t, third)
	if _, err := third.State().Get("scratch"); !errors.Is(err, session.ErrStateKeyNotExist) {
		t.Fatalf("the first load's own state reached the third: %v", err)
	}
	if first.Events().Len() != 6 || second.Events().Len() != 7 || third.Events().Len() != 7 ||
		first.Events().At(5).InvocationID != "first" || second.Events().At(6).InvocationID != "refused" ||
		third.Events().At(6).InvocationID != "inv" {
		t.Fatalf("the loads have %d, %d, %d events", first.Events().Len(), second.Events().Len(), third.Events().Len())
	}
}

// A read with a filter asks for what it filters and keeps nothing; a session gone, or deleted
// through the service, is read whole when made again.
func TestFilteredReadsAndGoneSessionsAreReadAsAsked(t *testing.T) {
	ctx, app := t.Context(), unique("adk-go")
	service, reads := countingService(t)
	client := newClient(t)
	_, err := client.CreateSession(ctx, app, user, sessionary.SessionCreate{SessionID: "s"})
	check(t, err)
	appendSaid(t, client, app, "s", 0, 5)
	got, err := service.Get(ctx, &session.GetRequest{AppName: app, UserID: user, SessionID: "s", NumRecentEvents: 2})
	check(t, err)
	if got.Session.Events().Len() != 2 {
		t.Fatalf("%d events", got.Session.Events().Len())
	}
	load(t, service, app, "s")
	asked(t, reads, "2", "")

	check(t, client.DeleteSession(ctx, app, user, "s"))
	if _, err := service.Get(ctx, &session.GetRequest{AppName: app, UserID: user, SessionID: "s"}); !errors.Is(err, sessionary.ErrSessionNotFound) {
		t.Fatalf("a missing session: %v", err)
	}
	_, err = client.CreateSession(ctx, app, user, sessionary.SessionCreate{SessionID: "s"})
	check(t, err)
	sameAsAFreshRead(t, load(t, service, app, "s"))
	asked(t, reads, "32", "")

	check(t, service.Delete(ctx, &session.DeleteRequest{AppName: app, UserID: user, SessionID: "s"}))
	_, err = service.Create(ctx, &session.CreateRequest{AppName: app, UserID: user, SessionID: "s"})
	check(t, err)
	sameAsAFreshRead(t, load(t, service, app, "s"))
	asked(t, reads, "")
}

// The events kept are bounded: the least recently read session's go first, a session longer
// than the bound is never kept, and 0 keeps none.
func TestTheEventsKeptAreBounded(t *testing.T) {
	service, reads := countingService(t, WithCachedEvents(10))
	client, app := newClient(t), unique("adk-go")
	for id, events := range map[string]int{"a": 4, "b": 4, "c": 4, "long": 11} {
		_, err := client.CreateSession(t.Context(), app, user, sessionary.SessionCreate{SessionID: id})
		check(t, err)
		appendSaid(t, client, app, id, 0, events)
	}
	// c evicts b, the least recently read; b then evicts a; long is never kept.
	for _, id := range []string{"a", "b", "a", "c", "a", "c", "b", "long", "long", "c", "a"} {
		sameAsAFreshRead(t, load(t, service, app, id))
	}
	asked(t, reads, "", "", "32", "", "32", "32", "", "", "", "32", "")

	none, reads := countingService(t, WithCachedEvents(0))
	load(t, none, app, "a")
	load(t, none, app, "a")
	asked(t, reads, "", "")
}

func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
