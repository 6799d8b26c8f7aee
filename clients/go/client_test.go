package sessionary

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// These tests run against a live server, at SESSIONARY_URL (`make test` starts one); without
// it they are skipped.

func server(t *testing.T) string {
	t.Helper()
	base := os.Getenv("SESSIONARY_URL")
	if base == "" {
		t.Skip("SESSIONARY_URL is not set: no server to test against")
	}
	return base
}

func client(t *testing.T, options Options) *Client {
	t.Helper()
	if options.BaseURL == "" {
		options.BaseURL = server(t)
	}
	c, err := New(options)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// unique is a name no other run of the tests uses.
func unique(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:])
}

func must[T any](t *testing.T) func(T, error) T {
	return func(value T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return value
	}
}

func collect[T any](t *testing.T, seq func(func(T, error) bool)) []T {
	t.Helper()
	var items []T
	for item, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, item)
	}
	return items
}

func said(author, text string) Event {
	role := "model"
	if author == "user" {
		role = "user"
	}
	return Event{Author: author, Content: Text(role, text)}
}

func TestASessionsEventsAreStoredAndPaged(t *testing.T) {
	ctx := context.Background()
	c, app := client(t, Options{}), unique("go")
	session := must[*Session](t)(c.CreateSession(ctx, app, "ada", SessionCreate{State: State{"user:units": "metric"}}))
	stored := must[*Event](t)(c.AppendEvent(ctx, app, "ada", session.ID, said("user", "Oslo?"), IfMatch(session.Version)))
	if stored.Seq != 1 || stored.ID == "" || stored.Content.Text() != "Oslo?" {
		t.Fatalf("stored %+v", stored)
	}
	extra := said("forecaster", "Sunny.")
	extra.Extra = map[string]json.RawMessage{"turnComplete": json.RawMessage("true")}
	must[[]Event](t)(c.AppendEvents(ctx, app, "ada", session.ID, []Event{extra, said("user", "Thanks")}))
	events := collect(t, c.Events(ctx, app, "ada", session.ID, EventFilter{Page: Page{PageSize: Int64(1)}}))
	var texts []string
	for _, event := range events {
		texts = append(texts, event.Content.Text())
	}
	if !slices.Equal(texts, []string{"Oslo?", "Sunny.", "Thanks"}) || string(events[1].Extra["turnComplete"]) != "true" {
		t.Fatalf("events %v, extra %s", texts, events[1].Extra)
	}
	read := must[*Session](t)(c.GetSession(ctx, app, "ada", session.ID, SessionRead{NumRecentEvents: Int64(2)}))
	if len(read.Events) != 2 || read.Version != 3 || read.State["user:units"] != "metric" {
		t.Fatalf("read %+v", read)
	}
	count := must[*EventCount](t)(c.CountEvents(ctx, app, "ada", session.ID))
	if count.Count != 3 || *count.LastSeq != 3 {
		t.Fatalf("count %+v", count)
	}
}

func TestErrorsCarryTheProblemsCode(t *testing.T) {
	ctx := context.Background()
	c, app := client(t, Options{}), unique("go")
	session := must[*Session](t)(c.CreateSession(ctx, app, "ada", SessionCreate{SessionID: "s1"}))
	_, err := c.CreateSession(ctx, app, "ada", SessionCreate{SessionID: "s1"})
	if !errors.Is(err, ErrSessionAlreadyExists) || !errors.Is(err, ErrConflict) {
		t.Fatalf("a second create: %v", err)
	}
	must[*Event](t)(c.AppendEvent(ctx, app, "ada", "s1", said("user", "hi")))
	_, err = c.UpdateState(ctx, app, "ada", "s1", State{"step": 2}, IfMatch(session.Version))
	var apiErr *APIError
	if !errors.Is(err, ErrStaleSession) || !errors.As(err, &apiErr) || *apiErr.Problem.CurrentVersion != 1 {
		t.Fatalf("a stale write: %v", err)
	}
	_, err = c.GetSession(ctx, app, "ada", "no-such-session", SessionRead{})
	if !errors.Is(err, ErrSessionNotFound) || !errors.As(err, &apiErr) || apiErr.Status != 404 {
		t.Fatalf("a missing session: %v", err)
	}
	_, err = c.GetSession(ctx, app, "ada", "..", SessionRead{})
	if !errors.Is(err, ErrValidation) {
		t.Fatalf("a dot-dot id: %v", err)
	}
	_, err = c.AppendEvent(ctx, app, "ada", "s1", Event{ID: stored(t, c, app), Author: "user"})
	if err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err = c.Health(cancelled); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled call: %v", err)
	}
	down := client(t, Options{BaseURL: "http://127.0.0.1:9", Retries: 1, Backoff: time.Millisecond})
	var conn *ConnectionError
	if _, err = down.Health(ctx); !errors.As(err, &conn) {
		t.Fatalf("no server: %v", err)
	}
}

// encoding/json would send U+FFFD in place of each byte that is not UTF-8: "e\xff" and "e\xfe"
// would be one event id, the second append taken for a resend of the first and never stored.
func TestStringsThatAreNotUTF8AreRefusedBeforeTheyAreSent(t *testing.T) {
	ctx := context.Background()
	var sent atomic.Int32
	c := client(t, Options{BaseURL: proxy(t, func(*http.Request, *http.Response) bool {
		sent.Add(1)
		return false
	})})
	app := unique("go")
	must[*Session](t)(c.CreateSession(ctx, app, "ada", SessionCreate{SessionID: "s"}))
	calls := map[string]func() error{
		"path.session_id": func() error {
			_, err := c.GetSession(ctx, app, "ada", "s\xff", SessionRead{})
			return err
		},
		"path.user_id": func() error { return c.DeleteSession(ctx, app, "ada\xff", "s") },
		"body (a new session's id)": func() error {
			_, err := c.CreateSession(ctx, app, "ada", SessionCreate{SessionID: "t\xff"})
			return err
		},
		"body (an event id)": func() error {
			_, err := c.AppendEvent(ctx, app, "ada", "s", Event{ID: "e\xff", Author: "user"})
			return err
		},
		"body (an event id of a batch)": func() error {
			_, err := c.AppendEvents(ctx, app, "ada", "s", []Event{{ID: "e\xfe", Author: "user"}})
			return err
		},
		"body (a state key)": func() error {
			_, err := c.UpdateState(ctx, app, "ada", "s", State{"k\xff": 1})
			return err
		},
		"body (an import)": func() error {
			_, err := c.Import(ctx, app, "ada", []byte("{\"id\": \"s\xff\"}\n"))
			return err
		},
	}
	before := sent.Load()
	for what, call := range calls {
		err := call()
		var refused *APIError
		if !errors.Is(err, ErrValidation) || !errors.As(err, &refused) ||
			!strings.HasPrefix(refused.Problem.Detail, strings.Fields(what)[0]+": ") ||
			!strings.HasSuffix(refused.Problem.Detail, "must be valid UTF-8 (not sent)") {
			t.Errorf("%s: %v", what, err)
		}
	}
	if n := sent.Load() - before; n != 0 {
		t.Errorf("%d of the refused requests were sent", n)
	}
	// A real U+FFFD is valid UTF-8, and so is text that only reads like its JSON escape.
	for _, id := range []string{"e\ufffd", `e\ufffd`, `e\\ufffd`} {
		if got := must[*Event](t)(c.AppendEvent(ctx, app, "ada", "s", Event{ID: id, Author: "user"})); got.ID != id {
			t.Errorf("sent %q, stored %q", id, got.ID)
		}
	}
}

// stored is the id of an event appended in a session of its own, for an id sent again.
func stored(t *testing.T, c *Client, app string) string {
	ctx := context.Background()
	session := must[*Session](t)(c.CreateSession(ctx, app, "bob", SessionCreate{}))
	return must[*Event](t)(c.AppendEvent(ctx, app, "bob", session.ID, said("user", "x"))).ID
}

// proxy is a real server behind a proxy that can lose answers: lose(r) says which.
func proxy(t *testing.T, lose func(r *http.Request, answer *http.Response) bool) string {
	t.Helper()
	target, _ := url.Parse(server(t))
	forward := httputil.NewSingleHostReverseProxy(target)
	forward.FlushInterval = -1
	forward.ModifyResponse = func(answer *http.Response) error {
		if lose(answer.Request, answer) {
			return errors.New("lost")
		}
		return nil
	}
	forward.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, _ error) {
		w.WriteHeader(http.StatusBadGateway)
	}
	front := httptest.NewServer(forward)
	t.Cleanup(front.Close)
	return front.URL
}

func TestAnAppendWhoseAnswerIsLostIsSentAgainAndStoredOnce(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	var sent []string
	front := proxy(t, func(r *http.Request, _ *http.Response) bool {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/events") {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, r.URL.Path)
		return len(sent) == 1 // stored, but the answer is lost: a 502
	})
	c, app := client(t, Options{BaseURL: front, Backoff: time.Millisecond}), unique("go")
	session := must[*Session](t)(c.CreateSession(ctx, app, "ada", SessionCreate{}))
	event := must[*Event](t)(c.AppendEvent(ctx, app, "ada", session.ID, said("user", "once")))
	events := collect(t, c.Events(ctx, app, "ada", session.ID, EventFilter{}))
	if len(sent) != 2 || len(events) != 1 || events[0].ID != event.ID || event.Seq != 1 {
		t.Fatalf("sent %d times, stored %d events", len(sent), len(events))
	}
	// A create is not resent: it could make a second session.
	c2 := client(t, Options{BaseURL: proxy(t, func(r *http.Request, _ *http.Response) bool {
		return r.Method == http.MethodPost
	}), Backoff: time.Millisecond})
	if _, err := c2.CreateSession(ctx, app, "ada", SessionCreate{}); !errors.Is(err, &errorKind{status: 502}) {
		t.Fatalf("a create with its answer lost: %v", err)
	}
}

func TestAStreamReplaysThenFollowsAndResumesWhereItWasCut(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	var resumedAfter []string
	front := proxy(t, func(r *http.Request, answer *http.Response) bool {
		if !strings.HasSuffix(r.URL.Path, "/events:stream") {
			return false
		}
		mu.Lock()
		resumedAfter = append(resumedAfter, r.Header.Get("Last-Event-ID"))
		first := len(resumedAfter) == 1
		mu.Unlock()
		if first { // the first connection is cut after its first frame
			answer.Body = cutAfterFrames(answer.Body, 1)
		}
		return false
	})
	c, app := client(t, Options{BaseURL: front, Backoff: time.Millisecond}), unique("go")
	session := must[*Session](t)(c.CreateSession(ctx, app, "ada", SessionCreate{
		Events: []Event{said("user", "one"), said("agent", "two")}}))
	var seen []string
	for frame, err := range c.StreamEvents(ctx, app, "ada", session.ID, StreamOptions{AfterSeq: Int64(0)}) {
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, frame.Event)
		if frame.Event == "appended" && frame.ID == 2 {
			must[*Event](t)(c.AppendEvent(ctx, app, "ada", session.ID, said("user", "three")))
			must[*Session](t)(c.CloseSession(ctx, app, "ada", session.ID, SessionClose{Outcome: "completed"}))
		}
	}
	if !slices.Equal(seen, []string{"appended", "appended", "appended", "closed"}) {
		t.Fatalf("frames %v", seen)
	}
	if !slices.Equal(resumedAfter, []string{"0", "1"}) {
		t.Fatalf("opened after %v", resumedAfter)
	}
}

// cutAfterFrames ends a stream's body after n frames, as a dropped connection does.
func cutAfterFrames(body io.ReadCloser, n int) io.ReadCloser {
	data := make([]byte, 0, 4096)
	buf := make([]byte, 512)
	for bytes.Count(data, []byte("\n\n")) < n {
		got, err := body.Read(buf)
		data = append(data, buf[:got]...)
		if err != nil {
			break
		}
	}
	body.Close()
	frames := bytes.SplitAfter(data, []byte("\n\n"))
	return io.NopCloser(bytes.NewReader(bytes.Join(frames[:n], nil)))
}

func TestAStreamEndsWhenItsContextDoes(t *testing.T) {
	c, app := client(t, Options{}), unique("go")
	session := must[*Session](t)(c.CreateSession(context.Background(), app, "ada", SessionCreate{}))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	for _, err := range c.StreamEvents(ctx, app, "ada", session.ID, StreamOptions{}) {
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("the stream ended with %v", err)
		}
	}
}

func TestAnEraseEndsTheUsersStreamAndTheAppsGoesOn(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var opened atomic.Int32 // connections of ada's stream
	front := proxy(t, func(r *http.Request, _ *http.Response) bool {
		if strings.HasSuffix(r.URL.Path, "/users/ada/sessions:stream") {
			opened.Add(1)
		}
		return false
	})
	c, app := client(t, Options{BaseURL: front, Backoff: time.Millisecond}), unique("go")
	session := must[*Session](t)(c.CreateSession(ctx, app, "ada", SessionCreate{}))
	// Ada's stream until it ends: reopened, it would wait until ctx ends, and fail with it.
	adas := make(chan Frame, 8)
	ended := make(chan error, 1)
	go func() {
		defer close(ended)
		for frame, err := range c.StreamSessions(ctx, app, "ada", StreamOptions{}) {
			if err != nil {
				ended <- err
				return
			}
			adas <- frame
		}
	}()
	apps := make(chan Frame, 8)
	appCtx, stopApp := context.WithCancel(ctx)
	defer stopApp()
	go func() {
		for frame, err := range c.StreamAppSessions(appCtx, app, StreamOptions{}) {
			if err != nil {
				return
			}
			apps <- frame
		}
	}()
	time.Sleep(1500 * time.Millisecond) // both connected: they tell what happens from now
	must[*Erasure](t)(c.EraseUser(ctx, app, "ada"))

	if err := <-ended; err != nil {
		t.Fatalf("ada's stream ended with %v", err)
	}
	close(adas)
	var heard []string
	for frame := range adas {
		var data map[string]any
		if err := frame.Decode(&data); err != nil {
			t.Fatal(err)
		}
		heard = append(heard, fmt.Sprintf("%s %v %v", frame.Event, data["userId"], data["sessionId"]))
	}
	if want := []string{"deleted ada " + session.ID, "erased ada <nil>"}; !slices.Equal(heard, want) {
		t.Fatalf("ada's stream heard %q, not %q", heard, want)
	}
	if n := opened.Load(); n != 1 {
		t.Fatalf("ada's stream was opened %d times", n)
	}

	// The app's stream is told, and goes on: it hears a session created afterwards.
	must[*Session](t)(c.CreateSession(ctx, app, "bob", SessionCreate{SessionID: "later"}))
	var told []string
	for !slices.Contains(told, "created bob later") {
		select {
		case frame := <-apps:
			var data struct{ UserID, SessionID string }
			if err := frame.Decode(&data); err != nil {
				t.Fatal(err)
			}
			told = append(told, strings.TrimSpace(frame.Event+" "+data.UserID+" "+data.SessionID))
		case <-ctx.Done():
			t.Fatalf("the app's stream heard only %q", told)
		}
	}
	if !slices.Contains(told, "erased ada") {
		t.Fatalf("the app's stream heard %q", told)
	}
}

func TestEveryOperationAnswers(t *testing.T) {
	ctx := context.Background()
	c, app := client(t, Options{}), unique("go")
	root := must[*Session](t)(c.CreateSession(ctx, app, "ada", SessionCreate{
		SessionID: "root", DisplayName: "Trip", Labels: map[string]string{"team": "a"},
		Events: []Event{said("user", "Plan a trip to Bergen"), {Author: "planner", InvocationID: "i2",
			Content: &Content{Role: "model", Parts: []Part{{FunctionCall: &FunctionCall{ID: "c1", Name: "forecast"}}}}}},
	}))
	updated := must[*Session](t)(c.UpdateSession(ctx, app, "ada", root.ID, SessionUpdate{DisplayName: Null[string]()}))
	if updated.DisplayName != nil {
		t.Fatalf("display name %v", *updated.DisplayName)
	}
	labelled := must[*SessionPage](t)(c.ListAppSessions(ctx, app, SessionFilter{Labels: map[string]string{"team": "a"}}))
	if len(labelled.Sessions) != 1 {
		t.Fatalf("labelled %d", len(labelled.Sessions))
	}
	// An empty map of labels is sent, and clears them; a nil one is not sent.
	unlabelled := must[*Session](t)(c.UpdateSession(ctx, app, "ada", root.ID, SessionUpdate{Labels: map[string]string{}}))
	if len(unlabelled.Labels) != 0 {
		t.Fatalf("labels %v", unlabelled.Labels)
	}
	calls := must[[]ToolCall](t)(c.ToolCalls(ctx, app, "ada", root.ID, ToolCallFilter{}))
	if len(calls) != 1 || calls[0].Status != "pending" {
		t.Fatalf("calls %+v", calls)
	}
	child := must[*Session](t)(c.CreateChild(ctx, app, "ada", root.ID, ChildCreate{SessionID: "child", FunctionCallID: "c1"}))
	must[*Session](t)(c.CloseSession(ctx, app, "ada", child.ID, SessionClose{Outcome: "completed", Result: map[string]string{"forecast": "sun"}}))
	fork := must[*Session](t)(c.Fork(ctx, app, "ada", root.ID, SessionFork{SessionID: "fork", AtSeq: Int64(1)}))
	forked := must[*Session](t)(c.GetSession(ctx, app, "ada", fork.ID, SessionRead{}))
	if len(forked.Events) != 1 {
		t.Fatalf("the fork has %d events", len(forked.Events))
	}
	if kids := collect(t, c.Children(ctx, app, "ada", root.ID)); len(kids) != 2 {
		t.Fatalf("children %d", len(kids))
	}
	if ancestors := must[[]Session](t)(c.Lineage(ctx, app, "ada", fork.ID)); len(ancestors) != 1 {
		t.Fatalf("lineage %d", len(ancestors))
	}
	view := must[*ContextView](t)(c.Context(ctx, app, "ada", root.ID, ContextRead{TokenBudget: Int64(1000)}))
	if len(view.Events) != 3 {
		t.Fatalf("context %d", len(view.Events))
	}
	must[*Healed](t)(c.Heal(ctx, app, "ada", root.ID, SessionHeal{}))
	summary := must[*Event](t)(c.Compact(ctx, app, "ada", root.ID, SessionCompact{Strategy: "summary", KeepLast: Int64(1), Summary: "A trip."}))
	if summary.Actions == nil || summary.Actions.Compaction == nil {
		t.Fatalf("compaction %+v", summary)
	}
	rewritten := must[*Event](t)(c.RewriteEvent(ctx, app, "ada", root.ID, root.Events[0].ID, *Text("user", "[redacted]")))
	if rewritten.Content.Text() != "[redacted]" {
		t.Fatalf("rewritten %+v", rewritten)
	}
	must[*Event](t)(c.QueueEvent(ctx, app, "ada", fork.ID, said("user", "queued")))
	if queued := must[[]Event](t)(c.Pending(ctx, app, "ada", fork.ID)); len(queued) != 1 {
		t.Fatalf("queued %d", len(queued))
	}
	if promoted := must[[]Event](t)(c.PromotePending(ctx, app, "ada", fork.ID, PendingPromote{})); len(promoted) != 1 {
		t.Fatalf("promoted %d", len(promoted))
	}
	if err := c.ClearPending(ctx, app, "ada", fork.ID); err != nil {
		t.Fatal(err)
	}
	must[*Event](t)(c.AppendEvent(ctx, app, "ada", fork.ID, Event{Author: "user", InvocationID: "later"}))
	must[*Event](t)(c.Rewind(ctx, app, "ada", fork.ID, SessionRewind{BeforeInvocationID: "later"}))
	removed := must[*EventsRemoved](t)(c.RemoveEvent(ctx, app, "ada", fork.ID, forked.Events[0].ID))
	if len(removed.RemovedEventIDs) != 1 {
		t.Fatalf("removed %+v", removed)
	}
	must[*Trimmed](t)(c.Trim(ctx, app, "ada", fork.ID, SessionTrim{KeepLast: 1}))
	must[*Trimmed](t)(c.Reset(ctx, app, "ada", fork.ID))
	ndjson := must[[]byte](t)(c.Export(ctx, app, "ada", root.ID))
	imported := must[*Session](t)(c.Import(ctx, app, "bob", ndjson))
	if imported.ID != root.ID || imported.UserID != "bob" {
		t.Fatalf("imported %+v", imported)
	}
	// The export was taken after the rewrite: what it replaced is nowhere.
	if hits := collect(t, c.SearchHits(ctx, app, SearchQuery{Q: "redacted"})); len(hits) != 2 {
		t.Fatalf("hits %+v", hits)
	}
	if hits := must[*SearchPage](t)(c.Search(ctx, app, SearchQuery{Q: "Bergen"})); len(hits.Hits) != 0 {
		t.Fatalf("hits %+v", hits.Hits)
	}
	must[*AppUsage](t)(c.Usage(ctx, app, UsageFilter{}))
	if apps := collect(t, c.Apps(ctx)); !slices.ContainsFunc(apps, func(a AppSummary) bool { return a.AppName == app }) {
		t.Fatalf("apps lack %s", app)
	}
	if users := collect(t, c.Users(ctx, app)); len(users) != 2 {
		t.Fatalf("users %+v", users)
	}
	if state := must[State](t)(c.UpdateAppState(ctx, app, State{"theme": "dark"})); state["theme"] != "dark" {
		t.Fatalf("app state %v", state)
	}
	if state := must[State](t)(c.AppState(ctx, app)); state["theme"] != "dark" {
		t.Fatalf("app state %v", state)
	}
	must[State](t)(c.UpdateUserState(ctx, app, "ada", State{"units": "metric"}))
	if state := must[State](t)(c.UserState(ctx, app, "ada")); state["units"] != "metric" {
		t.Fatalf("user state %v", state)
	}
	if sessions := collect(t, c.Sessions(ctx, app, "ada", SessionFilter{Order: "asc"})); len(sessions) != 3 {
		t.Fatalf("sessions %d", len(sessions))
	}
	if err := c.DeleteSession(ctx, app, "ada", fork.ID, IfExists()); err != nil {
		t.Fatal(err)
	}
	must[*KeyScope](t)(c.KeyScope(ctx))
	must[*Health](t)(c.Health(ctx))
	if ready := must[*Readiness](t)(c.Readiness(ctx)); ready.Status != "ready" || ready.Recall == "" {
		t.Fatalf("readiness %+v", ready)
	}
	if metrics := must[string](t)(c.Metrics(ctx)); !strings.Contains(metrics, "# TYPE") {
		t.Fatalf("metrics %.200s", metrics)
	}
	ctxStream, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	for range c.StreamSessions(ctxStream, app, "ada", StreamOptions{}) {
	}
	for range c.StreamAppSessions(ctxStream, app, StreamOptions{}) {
	}
}
