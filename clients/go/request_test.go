package sessionary

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// What every call shares, whatever the operation: the server's Retry-After, options of one
// call, the request id on every error, the User-Agent.

// answering is a local server whose answer(n, w, r) answers its nth request (from 1); it
// records each request's headers.
func answering(t *testing.T, answer func(n int, w http.ResponseWriter, r *http.Request)) (string, func() []http.Header) {
	t.Helper()
	var mu sync.Mutex
	var seen []http.Header
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		n := len(seen)
		mu.Unlock()
		answer(n, w, r)
	}))
	t.Cleanup(server.Close)
	return server.URL, func() []http.Header {
		mu.Lock()
		defer mu.Unlock()
		return append([]http.Header(nil), seen...)
	}
}

func unavailable(w http.ResponseWriter, retryAfter string) {
	if retryAfter != "" {
		w.Header().Set("Retry-After", retryAfter)
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(http.StatusServiceUnavailable)
	fmt.Fprint(w, `{"type":"about:blank","title":"Busy","status":503,"detail":"busy","code":"search_busy"}`)
}

func healthy(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, `{"status":"ok"}`)
}

func TestAResendWaitsTheRetryAfterTheServerAsks(t *testing.T) {
	base, seen := answering(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			unavailable(w, "1")
			return
		}
		healthy(w)
	})
	// The client's own backoff would resend within a millisecond.
	c := client(t, Options{BaseURL: base, Backoff: time.Millisecond})
	started := time.Now()
	must[*Health](t)(c.Health(context.Background()))
	if waited := time.Since(started); waited < time.Second || len(seen()) != 2 {
		t.Fatalf("resent after %v, %d requests: not the second asked", waited, len(seen()))
	}
}

func TestRetryAfterIsSecondsOrADateAndAtMostAMinute(t *testing.T) {
	for value, want := range map[string]time.Duration{
		"1": time.Second, "0.5": 500 * time.Millisecond, "0": 0, "3600": time.Minute,
		time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat): 0,
	} {
		if got, ok := retryAfter(http.Header{"Retry-After": {value}}); !ok || got != want {
			t.Errorf("Retry-After %q: waits %v (%v), not %v", value, got, ok, want)
		}
	}
	inAnHour := time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)
	if got, ok := retryAfter(http.Header{"Retry-After": {inAnHour}}); !ok || got != time.Minute {
		t.Errorf("Retry-After in an hour: waits %v (%v)", got, ok)
	}
	for _, value := range []string{"", "soon", "-1", "NaN"} {
		if got, ok := retryAfter(http.Header{"Retry-After": {value}}); ok {
			t.Errorf("Retry-After %q: waits %v, not the client's backoff", value, got)
		}
	}
}

func TestACallsOwnOptionsOverTheClients(t *testing.T) {
	ctx := context.Background()
	base, seen := answering(t, func(n int, w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/slow/"):
			time.Sleep(500 * time.Millisecond)
			healthy(w)
		case r.URL.Path == "/readyz":
			unavailable(w, "")
		case strings.HasSuffix(r.URL.Path, ":stream"): // each connection ends at once
			w.Header().Set("Content-Type", "text/event-stream")
		default:
			healthy(w)
		}
	})
	c := client(t, Options{BaseURL: base, Header: http.Header{"X-Team": {"a"}}, Backoff: time.Millisecond})
	must[*Health](t)(c.Health(ctx, WithHeader("X-Request-ID", "call-1"), WithHeader("X-Team", "b")))
	sent := seen()[0]
	if sent.Get("X-Request-ID") != "call-1" || sent.Get("X-Team") != "b" {
		t.Errorf("sent %v", sent)
	}
	if sent := must[*Health](t)(c.Health(ctx)); sent == nil || seen()[1].Get("X-Team") != "a" {
		t.Errorf("the next call sent %v: a call's headers are its own", seen()[1])
	}
	// Resent twice by default (a read, a 503); once only with WithMaxRetries(0).
	before := len(seen())
	if _, err := c.Readiness(ctx, WithMaxRetries(0)); !errors.Is(err, ErrUnavailable) || len(seen())-before != 1 {
		t.Errorf("sent %d times: %v", len(seen())-before, err)
	}
	before = len(seen())
	if _, err := c.Readiness(ctx); !errors.Is(err, ErrUnavailable) || len(seen())-before != 3 {
		t.Errorf("sent %d times: %v", len(seen())-before, err)
	}
	// The client waits 10 s for an answer, which comes in half a second; this call waits 50 ms,
	// then it is a connection error.
	slow := client(t, Options{BaseURL: base + "/slow", Retries: -1})
	must[*Health](t)(slow.Health(ctx))
	_, err := slow.Health(ctx, WithTimeout(50*time.Millisecond), WithHeader("X-Request-ID", "call-2"))
	var conn *ConnectionError
	if !errors.As(err, &conn) || !errors.Is(err, context.DeadlineExceeded) || conn.RequestID != "call-2" {
		t.Errorf("a call past its timeout: %v", err)
	}
	// A stream is opened again twice by default; with WithMaxRetries(1), once.
	before = len(seen())
	for _, err := range c.StreamSessions(ctx, "a", "u", StreamOptions{}, WithMaxRetries(1),
		WithHeader("X-Request-ID", "call-3")) {
		if !errors.As(err, &conn) || conn.RequestID != "call-3" || len(seen())-before != 2 {
			t.Errorf("a stream lost at once, opened %d times: %v", len(seen())-before, err)
		}
	}
}

func TestErrorsCarryTheRequestID(t *testing.T) {
	ctx := context.Background()
	c, app := client(t, Options{}), unique("go")
	_, err := c.GetSession(ctx, app, "ada", "none", SessionRead{})
	var answer *APIError
	if !errors.As(err, &answer) || answer.Status != 404 || answer.Code() != "session_not_found" ||
		answer.RequestID == "" || answer.RequestID != answer.Header.Get("X-Request-ID") {
		t.Fatalf("a missing session: %#v", err)
	}
	// One the caller gives is the server's too.
	_, err = c.GetSession(ctx, app, "ada", "none", SessionRead{}, WithHeader("X-Request-ID", "mine-1"))
	if !errors.As(err, &answer) || answer.RequestID != "mine-1" {
		t.Fatalf("a missing session, asked as mine-1: %#v", err)
	}
	down := client(t, Options{BaseURL: "http://127.0.0.1:9", Retries: -1,
		Header: http.Header{"X-Request-Id": {"mine-2"}}})
	var conn *ConnectionError
	if _, err = down.Health(ctx); !errors.As(err, &conn) || conn.RequestID != "mine-2" {
		t.Fatalf("no server: %#v", err)
	}
}

func TestEveryRequestNamesTheClient(t *testing.T) {
	ctx := context.Background()
	base, seen := answering(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, ":stream") {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "event: closed\nid: 1\ndata: {}\n\n")
			return
		}
		healthy(w)
	})
	c := client(t, Options{BaseURL: base})
	must[*Health](t)(c.Health(ctx))
	collect(t, c.StreamEvents(ctx, "a", "u", "s", StreamOptions{}, WithHeader("X-Request-ID", "stream-1")))
	must[*Health](t)(c.Health(ctx, WithHeader("User-Agent", "my-agent/2")))
	var agents []string
	for _, header := range seen() {
		agents = append(agents, header.Get("User-Agent"))
	}
	want := "sessionary-go/" + Version
	if strings.Join(agents, ",") != want+","+want+",my-agent/2" {
		t.Errorf("User-Agent %v", agents)
	}
	if stream := seen()[1]; stream.Get("X-Request-ID") != "stream-1" || stream.Get("Accept") != "text/event-stream" {
		t.Errorf("the stream was opened with %v", stream)
	}
}

// An optional number is sent when it is given, 0 included, and left out when it is nil.
func TestAZeroIsSentAndANilIsNot(t *testing.T) {
	ctx := context.Background()
	wire := make(chan string, 1)
	base, _ := answering(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		wire <- strings.TrimSpace(r.URL.RawQuery + " " + string(body))
		healthy(w)
	})
	c := client(t, Options{BaseURL: base})
	ignore := func(_ any, err error) error { return err }
	for _, sent := range []struct {
		call func() error
		want string
	}{
		{func() error {
			return ignore(c.GetSession(ctx, "a", "u", "s", SessionRead{NumRecentEvents: Int64(0), UntilSeq: Int64(0)}))
		}, "numRecentEvents=0&untilSeq=0"},
		{func() error { return ignore(c.GetSession(ctx, "a", "u", "s", SessionRead{})) }, ""},
		{func() error {
			return ignore(c.ListEvents(ctx, "a", "u", "s", EventFilter{AfterSeq: Int64(0), BeforeTimestamp: Float64(0)}))
		}, "afterSeq=0&beforeTimestamp=0"},
		{func() error {
			return ignore(c.ToolCalls(ctx, "a", "u", "s", ToolCallFilter{TimeoutSeconds: Float64(0)}))
		}, "timeoutSeconds=0"},
		{func() error { return ignore(c.ToolCalls(ctx, "a", "u", "s", ToolCallFilter{})) }, ""},
		{func() error { return ignore(c.Usage(ctx, "a", UsageFilter{AfterTimestamp: Float64(0)})) }, "afterTimestamp=0"},
		{func() error { return ignore(c.Fork(ctx, "a", "u", "s", SessionFork{AtSeq: Int64(0)})) }, `{"atSeq":0}`},
		{func() error { return ignore(c.Fork(ctx, "a", "u", "s", SessionFork{})) }, `{}`},
		{func() error { return ignore(c.Heal(ctx, "a", "u", "s", SessionHeal{TimeoutSeconds: Float64(0)})) }, `{"timeoutSeconds":0}`},
		{func() error { return ignore(c.Heal(ctx, "a", "u", "s", SessionHeal{})) }, `{}`},
		{func() error {
			return ignore(c.Compact(ctx, "a", "u", "s", SessionCompact{Strategy: "truncate", KeepLast: Int64(0)}))
		}, `{"strategy":"truncate","keepLast":0}`},
		{func() error { return ignore(c.Trim(ctx, "a", "u", "s", SessionTrim{})) }, `{"keepLast":0}`},
		{func() error {
			return ignore(c.ListArtifacts(ctx, "a", "u", "s", ArtifactFilter{UntilSeq: Int64(0)}))
		}, "untilSeq=0"},
		{func() error {
			content, err := c.DownloadArtifact(ctx, "a", "u", "", "user:x", ArtifactDownload{Version: Int64(0)})
			if err == nil {
				content.Close()
			}
			return err
		}, "version=0"},
		{func() error { return ignore(c.ListArtifacts(ctx, "a", "u", "", ArtifactFilter{})) }, ""},
		{func() error {
			return ignore(c.RecallMemories(ctx, "a", "u", RecallQuery{MinSimilarity: Float64(0), IncludeApp: Bool(false)}))
		}, `{"minSimilarity":0,"includeApp":false}`},
		{func() error { return ignore(c.RecallAppMemories(ctx, "a", RecallQuery{})) }, `{}`},
		{func() error { return ignore(c.ListMemories(ctx, "a", "u", MemoryFilter{})) }, ""},
		// An empty map or list replaces what there was (clears it); nil is not sent.
		{func() error {
			return ignore(c.UpdateMemory(ctx, "a", "u", "m", MemoryUpdate{Metadata: map[string]any{}, Topics: []string{},
				Author: Null[string]()}))
		}, `{"author":null,"metadata":{},"topics":[]}`},
		{func() error { return ignore(c.UpdateAppMemory(ctx, "a", "m", MemoryUpdate{})) }, `{}`},
		{func() error {
			return ignore(c.UpdateSession(ctx, "a", "u", "s", SessionUpdate{Labels: map[string]string{}}))
		}, `{"labels":{}}`},
		{func() error { return ignore(c.UpdateSession(ctx, "a", "u", "s", SessionUpdate{})) }, `{}`},
	} {
		if err := sent.call(); err != nil {
			t.Fatal(err)
		}
		if got := <-wire; got != sent.want {
			t.Errorf("sent %q, not %q", got, sent.want)
		}
	}
}

// Every method that fails returns nothing beside its error (a nil pointer, slice or map, an
// empty string), whether the server said no or said something the client cannot read.
func TestAFailedCallReturnsNothingBesideItsError(t *testing.T) {
	ctx := context.Background()
	for answer, body := range map[string]string{
		"a 404": `{"type":"about:blank","title":"Not found","status":404,"detail":"none","code":"session_not_found"}`,
		// Every answer type's fields, all of the wrong type but the first (half decodable).
		"an answer it cannot read": `{"appName":"a","id":1,"state":"x","events":"x","sessions":"x","toolCalls":"x",` +
			`"hits":"x","apps":"x","users":"x","count":"x","removedEventIds":"x","removedEvents":"x","healed":"x",` +
			`"authEnabled":"x","status":1,"memories":"x","revisions":"x","remembered":"x","pending":"x"}`,
	} {
		base, _ := answering(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
			if answer == "a 404" {
				w.Header().Set("Content-Type", "application/problem+json")
				w.WriteHeader(http.StatusNotFound)
			}
			fmt.Fprint(w, body)
		})
		c := reflect.ValueOf(client(t, Options{BaseURL: base, Retries: -1}))
		for i := range c.NumMethod() {
			method, name := c.Method(i), c.Type().Method(i).Name
			kind := method.Type()
			if kind.Out(kind.NumOut()-1) != reflect.TypeFor[error]() {
				continue // an iterator: its errors are yielded
			}
			var args []reflect.Value
			for a := range kind.NumIn() - 1 { // the options left out
				switch in := kind.In(a); {
				case in == reflect.TypeFor[context.Context]():
					args = append(args, reflect.ValueOf(ctx))
				case in.Kind() == reflect.String:
					args = append(args, reflect.ValueOf("x"))
				default:
					args = append(args, reflect.Zero(in))
				}
			}
			out := method.Call(args)
			err, _ := out[len(out)-1].Interface().(error)
			if err == nil {
				if answer == "a 404" {
					t.Errorf("%s: no error after a 404", name)
				}
				continue // Export, Metrics: any 200 is theirs
			}
			for _, value := range out[:len(out)-1] {
				if !value.IsZero() {
					t.Errorf("%s, %s: %v beside %v", answer, name, value, err)
				}
			}
		}
	}
}
