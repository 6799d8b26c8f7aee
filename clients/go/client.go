// Package sessionary is a client for Sessionary, the session store for AI agents: a method per
// operation of its REST API, on net/http and the standard library alone.
//
// Error answers are *APIError values that errors.Is matches against the Err* kinds by their
// problem's code; a request that got no answer is a *ConnectionError. Reads, appends (each
// event is given an id when it has none, so that a resend stores it once) and the other
// idempotent writes are sent again after a lost answer, a 429 or a 502-504 (after the server's
// Retry-After, when it gives one); any request is sent again when its connection was refused
// (an upload, only if none of its body was read).
// Every method takes a context, which cancels it; then the ids of what it acts on (app, user,
// session, event, artifact name or memory id), as strings; then what it sends, if anything:
// one struct of the operation's parameters (SessionRead, SessionFork, ...), whose optional
// numbers are pointers so that 0 can be sent (Int64(0); nil is not sent), or a value that says
// what it is (an Event, a State); and RequestOptions last, which change how that one call is sent
// (WithTimeout, WithHeader, WithMaxRetries). A method that fails returns nil (or "") beside its
// error. An artifact method takes a session's id, or "" for the user's own `user:` artifacts;
// the app's memories have methods of their own (CreateAppMemory, ...), which take no user.
package sessionary

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"
)

// Version is this client's, named in the User-Agent of every request (`sessionary-go/0.1.0`).
const Version = "0.1.0"

const userAgent = "sessionary-go/" + Version

// DefaultURL is the server a client talks to when neither Options.BaseURL nor SESSIONARY_URL
// names one.
const DefaultURL = "http://127.0.0.1:8000"

// Options configure a Client; the zero value is a client of SESSIONARY_URL (else DefaultURL)
// with the key in SESSIONARY_API_KEY.
type Options struct {
	BaseURL string
	// APIKey is sent as `Authorization: Bearer …`.
	APIKey string
	// Header is sent with every request (a User-Agent in it replaces the client's).
	Header http.Header
	// Retries is how many times a request is sent again when that is safe (default 2; -1: none).
	Retries int
	// Backoff is the wait before the first resend, doubled for each next one, jittered
	// (default 250 ms).
	Backoff time.Duration
	// Timeout bounds each attempt of a request that is not a stream, an upload or a download,
	// its answer read whole (default 10 s; -1: none): the caller's context bounds those.
	Timeout time.Duration
	// HTTPClient sends the requests (default: one over http.DefaultTransport's settings, but
	// keeping up to 100 idle connections to the server rather than 2, for an agent's many
	// goroutines).
	HTTPClient *http.Client
}

// Client is a Sessionary client, safe for concurrent use.
type Client struct {
	base    *url.URL
	header  http.Header
	retries int
	backoff time.Duration
	timeout time.Duration
	http    *http.Client
	written *versions
}

// New is a client configured by options (see Options for the defaults).
func New(options Options) (*Client, error) {
	raw := options.BaseURL
	if raw == "" {
		raw = os.Getenv("SESSIONARY_URL")
	}
	if raw == "" {
		raw = DefaultURL
	}
	base, err := url.Parse(strings.TrimRight(raw, "/"))
	if err != nil || base.Host == "" {
		return nil, fmt.Errorf("sessionary: base URL %q: want http(s)://host[:port][/path]", raw)
	}
	header := options.Header.Clone()
	if header == nil {
		header = http.Header{}
	}
	key := options.APIKey
	if key == "" {
		key = os.Getenv("SESSIONARY_API_KEY")
	}
	if key != "" {
		header.Set("Authorization", "Bearer "+key)
	}
	c := &Client{base: base, header: header, retries: 2, backoff: 250 * time.Millisecond,
		timeout: 10 * time.Second, http: options.HTTPClient, written: &versions{at: map[string]int64{}}}
	if options.Retries != 0 {
		c.retries = max(options.Retries, 0)
	}
	if options.Backoff > 0 {
		c.backoff = options.Backoff
	}
	if options.Timeout != 0 {
		c.timeout = max(options.Timeout, 0)
	}
	if c.http == nil {
		c.http = defaultHTTP
	}
	return c, nil
}

var defaultHTTP = func() *http.Client {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 100
	return &http.Client{Transport: transport}
}()

// call is one request: its method, its path (its ids escaped already), and what it sends.
type call struct {
	method  string
	path    string
	query   url.Values
	body    any    // JSON, unless raw
	raw     []byte // sent as it is, with contentType
	ctype   string
	ifMatch string
	header  http.Header // over the client's
	stream  bool        // the answer is read by the caller, without a timeout
	// upload is the body, streamed as it is read (with ctype; size, its length when known),
	// without a timeout; sent again only when none of it was read.
	upload io.Reader
	size   int64
	// answers are the statuses past 2xx that a stream's caller reads (a download's 303 and
	// 304), not errors; redirects are not followed.
	answers []int
	// The call's options, applied by settle over the client's timeout and retries.
	options []func(*call)
	timeout time.Duration
	retries int
}

// RequestOption changes how one call is sent: WithTimeout, WithHeader, WithMaxRetries. Every
// method takes them last.
type RequestOption func(*call)

// WriteOption changes how a write to a session or a memory is made: IfMatch or IfExists, which
// only such writes take, or any RequestOption.
type WriteOption interface{ apply(*call) }

func (o RequestOption) apply(c *call) { o(c) }

// precondition is a WriteOption that is not a RequestOption: reads take none.
type precondition func(*call)

func (p precondition) apply(c *call) { p(c) }

// IfMatch makes the write happen only if the session is still at this version (the Version
// of a Session read, or a stored event's Seq), or the memory at this revision (a Memory's
// Revision); else it fails with ErrStaleSession (ErrStaleMemory) and writes nothing.
func IfMatch(version int64) WriteOption {
	return precondition(func(c *call) { c.ifMatch = `"` + strconv.FormatInt(version, 10) + `"` })
}

// IfExists makes the write fail with ErrSessionNotFound (ErrMemoryNotFound), rather than
// anything else, if the session (the memory) is gone (`If-Match: *`).
func IfExists() WriteOption { return precondition(func(c *call) { c.ifMatch = "*" }) }

// WithTimeout bounds each attempt of this call in place of Options.Timeout (0 or less: no
// bound); as that one, not a stream's, an upload's or a download's.
func WithTimeout(timeout time.Duration) RequestOption {
	return func(c *call) { c.timeout = max(timeout, 0) }
}

// WithHeader sends this header with this call, in place of the client's of that name: an
// `X-Request-ID`, say, which the server takes as the request's id, in its logs and on errors.
func WithHeader(name, value string) RequestOption {
	return func(c *call) {
		if c.header == nil {
			c.header = http.Header{}
		}
		c.header.Set(name, value)
	}
}

// WithMaxRetries is how many times this call may be sent again when that is safe, in place of
// Options.Retries (0: sent once); a stream's, how many times in a row it may be opened again.
func WithMaxRetries(retries int) RequestOption {
	return func(c *call) { c.retries = max(retries, 0) }
}

// with is req with options, applied when it is sent (settle).
func with[O WriteOption](req call, options []O) call {
	for _, option := range options {
		req.options = append(req.options, option.apply)
	}
	return req
}

// requestID is the X-Request-ID a settled call is sent with: its own, else the client's.
func (c *Client) requestID(req call) string {
	if id := req.header.Get("X-Request-ID"); id != "" {
		return id
	}
	return c.header.Get("X-Request-ID")
}

// settle is req with the client's timeout and retries, then its options over them.
func (c *Client) settle(req call) call {
	req.timeout, req.retries = c.timeout, c.retries
	for _, option := range req.options {
		option(&req)
	}
	req.options = nil
	return req
}

// do sends the call, resending it when that is safe, and decodes a success's JSON into out
// (when out is not nil). The answer's body is closed, but for a stream's, which is returned.
func (c *Client) do(ctx context.Context, req call, out any) (*http.Response, error) {
	req = c.settle(req)
	body := req.raw
	if req.body != nil {
		var err error
		if body, err = json.Marshal(req.body); err != nil {
			return nil, fmt.Errorf("sessionary: %s %s: %w", req.method, req.path, err)
		}
		req.ctype = "application/json"
	}
	// Raw JSON (an import's, an Extra field's) is sent as it is: it must be UTF-8 already.
	if !utf8.Valid(body) || req.body != nil && replacedUTF8(body) {
		return nil, refused("strings must be valid UTF-8", "body")
	}
	target := *c.base
	target.Path = c.base.Path + pathOnly(req.path)
	target.RawPath = c.base.EscapedPath() + req.path
	query := req.query
	if req.method == http.MethodGet {
		query = c.written.ask(req.path, query)
	}
	target.RawQuery = query.Encode()
	safe := idempotent(req)
	var upload *counted
	if req.upload != nil {
		upload = &counted{Reader: req.upload}
		req.upload = upload
	}
	for attempt := 0; ; attempt++ {
		resp, err := c.attempt(ctx, req, target.String(), body, out)
		retry := attempt < req.retries && (upload == nil || upload.read.Load() == 0)
		switch {
		case err == nil:
			c.written.note(req, resp)
			return resp, nil
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case !retry:
			return nil, err
		}
		wait := c.backoffWait(attempt)
		var apiErr *APIError
		var conn *ConnectionError
		switch {
		case errors.As(err, &apiErr) && safe && transient(apiErr):
			if after, ok := retryAfter(apiErr.Header); ok {
				wait = after
			}
		case errors.As(err, &conn) && (safe || errors.Is(err, syscall.ECONNREFUSED)):
		default:
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// replacedUTF8 says whether encoding/json wrote U+FFFD in data in place of a byte that is not
// UTF-8: it writes the escape `\ufffd` (and a real U+FFFD as it is), after an even number of
// backslashes (an odd one would escape the last). Sent, ids "e\xff" and "e\xfe" would be one.
func replacedUTF8(data []byte) bool {
	return bytes.Contains(data, []byte(`\ufffd`)) && replacement.Match(data)
}

var replacement = regexp.MustCompile(`(?:^|[^\\])(?:\\\\)*\\ufffd`)

// backoffWait is the client's wait before resending after attempt (from 0): full jitter, so
// that clients that failed together do not come back together.
func (c *Client) backoffWait(attempt int) time.Duration {
	return time.Duration(rand.Int64N(int64(min(5*time.Second, c.backoff<<attempt)) + 1))
}

// maxRetryAfter caps the wait a Retry-After asks for: a longer one is cut to it, and the call
// sent again then, rather than a caller kept waiting for an hour that a proxy asked for.
const maxRetryAfter = time.Minute

// retryAfter is the wait an answer's Retry-After asks for (seconds, or an HTTP date), at most
// maxRetryAfter; false when it asks none that can be read, and the client's backoff is waited.
func retryAfter(header http.Header) (time.Duration, bool) {
	value := header.Get("Retry-After")
	if seconds, err := strconv.ParseFloat(value, 64); err == nil {
		if !(seconds >= 0) { // negative, or NaN
			return 0, false
		}
		return time.Duration(min(seconds, maxRetryAfter.Seconds()) * float64(time.Second)), true
	}
	date, err := http.ParseTime(value)
	if err != nil {
		return 0, false
	}
	return min(max(time.Until(date), 0), maxRetryAfter), true
}

// attempt sends the request once: an error answer is an *APIError, no answer a
// *ConnectionError.
func (c *Client) attempt(ctx context.Context, req call, target string, body []byte, out any) (*http.Response, error) {
	if req.timeout > 0 && !req.stream && req.upload == nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.timeout) // the answer is read whole within
		defer cancel()
	}
	r, err := http.NewRequestWithContext(ctx, req.method, target, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if body == nil {
		r.Body = nil
	}
	if req.upload != nil {
		r.Body, r.ContentLength = io.NopCloser(req.upload), req.size // the caller's to close
	}
	r.Header.Set("Accept", "application/json")
	r.Header.Set("User-Agent", userAgent)
	for name, values := range c.header {
		r.Header[name] = values
	}
	for name, values := range req.header {
		r.Header[name] = values
	}
	if req.ctype != "" {
		r.Header.Set("Content-Type", req.ctype)
	}
	if req.ifMatch != "" {
		r.Header.Set("If-Match", req.ifMatch)
	}
	sender := c.http
	if req.answers != nil {
		unfollowed := *c.http
		unfollowed.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		sender = &unfollowed
	}
	resp, err := sender.Do(r)
	if err == nil && req.stream && (resp.StatusCode < 300 || slices.Contains(req.answers, resp.StatusCode)) {
		return resp, nil // the caller reads it, and cancels with its own context
	}
	var data []byte
	if err == nil {
		data, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if err != nil {
		return nil, &ConnectionError{Method: req.method, URL: target, Err: err, RequestID: c.requestID(req)}
	}
	if resp.StatusCode >= 300 {
		return nil, &APIError{Status: resp.StatusCode, Problem: problemOf(resp.StatusCode, data),
			Header: resp.Header, RequestID: resp.Header.Get("X-Request-ID")}
	}
	resp.Body = io.NopCloser(bytes.NewReader(data))
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return nil, fmt.Errorf("sessionary: %s %s: the answer: %w", req.method, target, err)
		}
	}
	return resp, nil
}

// counted is an upload's body, counting what was read of it: a request that read none of it
// (its connection refused) may be sent again with it. The count is atomic: net/http may read a
// body in a goroutine of its own.
type counted struct {
	io.Reader
	read atomic.Int64
}

func (c *counted) Read(p []byte) (int, error) {
	n, err := c.Reader.Read(p)
	c.read.Add(int64(n))
	return n, err
}

// A 429, 502, 503 or 504 that the same request may not meet again (a search past the server's
// time limit would).
func transient(err *APIError) bool {
	return slices.Contains([]int{429, 502, 503, 504}, err.Status) && err.Problem.Code != "search_timeout"
}

const sessionPath = `^/apps/[^/]+/users/[^/]+/sessions/[^/:]+`

var (
	// Writes that may be sent twice with the effect of once: appends and queued events (each
	// event carries an id, which the server stores once), an import of a session or a user (the
	// same export again writes nothing; a user's, streamed, only while none of it was read),
	// adding a session's events to memory (each is added once), emptying the queue, and merging
	// the same app or user state keys; and a recall, which writes nothing.
	idempotentPost = regexp.MustCompile(sessionPath + `/(events(:batch)?|pending)$|` + sessionPath + `:remember$|` +
		`^/apps/[^/]+/users/[^/]+(/sessions)?:import$|^/apps/[^/]+(/users/[^/]+)?/memories:recall$`)
	idempotentDelete = regexp.MustCompile(sessionPath + `/pending$`)
	idempotentPatch  = regexp.MustCompile(`^/apps/[^/]+(/users/[^/]+)?/state$`)
	// A second heal answers nothing, so it is safe to resend, but for one under If-Match.
	healPath = regexp.MustCompile(sessionPath + `:heal$`)
)

func idempotent(req call) bool {
	switch req.method {
	case http.MethodGet, http.MethodHead:
		return true
	case http.MethodPost:
		return idempotentPost.MatchString(req.path) || healPath.MatchString(req.path) && req.ifMatch == ""
	case http.MethodDelete:
		return idempotentDelete.MatchString(req.path)
	case http.MethodPatch:
		return idempotentPatch.MatchString(req.path)
	}
	return false
}

// newID is a random event id: 32 hex digits.
func newID() string {
	var b [16]byte
	_, _ = crand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// pathOnly is an escaped path unescaped, as url.URL.Path holds it.
func pathOnly(escaped string) string {
	plain, err := url.PathUnescape(escaped)
	if err != nil {
		return escaped
	}
	return plain
}

// --- Read your writes -----------------------------------------------------------------------

var (
	sessionOf        = regexp.MustCompile(sessionPath)
	readsWithVersion = regexp.MustCompile(sessionPath + `(/events)?$`)
	madeSession      = regexp.MustCompile(`^/apps/[^/]+/users/[^/]+/sessions(:import)?$`)
	userOf           = regexp.MustCompile(`^/apps/[^/]+/users/[^/]+$`)
	appOf            = regexp.MustCompile(`^/apps/[^/]+$`)
	etag             = regexp.MustCompile(`^"(\d+)"$`)
)

// versions keeps the version each session was at after this client's last write to it (the
// 10,000 most recent), and asks for it (`minVersion`) on reads of the session and its events:
// a server with a read replica answers them from the primary until the replica has caught up.
type versions struct {
	mu    sync.Mutex
	at    map[string]int64
	order []string
}

func (v *versions) ask(path string, query url.Values) url.Values {
	if !readsWithVersion.MatchString(path) {
		return query
	}
	v.mu.Lock()
	version, ok := v.at[sessionOf.FindString(path)]
	v.mu.Unlock()
	if !ok {
		return query
	}
	asked, _ := strconv.ParseInt(query.Get("minVersion"), 10, 64)
	query = cloneValues(query)
	query.Set("minVersion", strconv.FormatInt(max(version, asked), 10))
	return query
}

func (v *versions) note(req call, resp *http.Response) {
	session := sessionOf.FindString(req.path)
	if req.method == http.MethodDelete && session == req.path {
		v.forget(func(known string) bool { return known == session }) // a new session may take its id
		return
	}
	if req.method == http.MethodDelete && userOf.MatchString(req.path) {
		// An erase of the user (running or done) has deleted every session of theirs already.
		v.forget(func(known string) bool { return strings.HasPrefix(known, req.path+"/sessions/") })
		return
	}
	if req.method == http.MethodDelete && appOf.MatchString(req.path) {
		// An erase of the app: its sessions are going, and new ones may take their ids.
		v.forget(func(known string) bool { return strings.HasPrefix(known, req.path+"/users/") })
		return
	}
	match := etag.FindStringSubmatch(resp.Header.Get("ETag"))
	// Only a session's writes, and those that make one, answer its version (a memory's ETag
	// is its revision).
	if req.method == http.MethodGet || match == nil || req.stream || session == "" && !madeSession.MatchString(req.path) {
		return
	}
	version, _ := strconv.ParseInt(match[1], 10, 64)
	if session == "" || strings.HasSuffix(req.path, ":fork") || strings.HasSuffix(req.path, "/children") {
		var made struct{ ID, AppName, UserID string }
		data, _ := io.ReadAll(resp.Body)
		resp.Body = io.NopCloser(bytes.NewReader(data))
		if json.Unmarshal(data, &made) != nil || made.ID == "" {
			return
		}
		session = sessionPathOf(made.AppName, made.UserID, made.ID)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if _, known := v.at[session]; !known {
		v.order = append(v.order, session)
		if len(v.order) > 10_000 {
			delete(v.at, v.order[0])
			v.order = v.order[1:]
		}
	}
	v.at[session] = max(v.at[session], version)
}

// forget drops the version of each session gone.
func (v *versions) forget(gone func(session string) bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, session := range v.order {
		if gone(session) {
			delete(v.at, session)
		}
	}
	v.order = slices.DeleteFunc(v.order, gone)
}

func cloneValues(values url.Values) url.Values {
	clone := url.Values{}
	for name, list := range values {
		clone[name] = append([]string(nil), list...)
	}
	return clone
}
