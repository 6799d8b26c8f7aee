package sessionary

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
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
