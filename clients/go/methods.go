package sessionary

import (
	"context"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"
)

// segment is an id as one escaped path segment. An id `.` or `..` is refused here, as the
// server refuses it: URLs resolve dot segments, so it would reach another route. So is an id
// that is not UTF-8, which the server would refuse too.
func segment(name, id string) (string, error) {
	switch {
	case id == "." || id == ".." || id == "":
		return "", refused("an id must not be empty, `.` or `..`", "path", name)
	case !utf8.ValidString(id):
		return "", refused("an id must be valid UTF-8", "path", name)
	}
	return url.PathEscape(id), nil
}

// pathTo is "/apps/{app}[/users/{user}[/sessions/{id}]]" + rest, its ids escaped.
func pathTo(rest string, ids ...string) (string, error) {
	names := []string{"app_name", "user_id", "session_id", "event_id"}
	prefixes := []string{"/apps/", "/users/", "/sessions/", "/events/"}
	var path strings.Builder
	for i, id := range ids {
		escaped, err := segment(names[i], id)
		if err != nil {
			return "", err
		}
		path.WriteString(prefixes[i] + escaped)
	}
	return path.String() + rest, nil
}

func sessionPathOf(app, user, id string) string {
	path, _ := pathTo("", app, user, id)
	return path
}

// send is do for a path of ids: an id refused before sending is the call's error.
func (c *Client) send(ctx context.Context, req call, out any, ids ...string) error {
	path, err := pathTo(req.path, ids...)
	if err != nil {
		return err
	}
	req.path = path
	_, err = c.do(ctx, req, out)
	return err
}

// answer is what a method returns: value, or its zero (nil) beside an error, never a value
// half decoded.
func answer[T any](value T, err error) (T, error) {
	if err != nil {
		var zero T
		return zero, err
	}
	return value, nil
}

// query is a call's query string of the values that are given: a string that is not empty (the
// API takes none that is), a number whose pointer is not nil (0 is a value).
type query url.Values

func (q query) str(name, value string) query {
	if value != "" {
		url.Values(q).Set(name, value)
	}
	return q
}

func (q query) int(name string, value *int64) query {
	if value != nil {
		url.Values(q).Set(name, strconv.FormatInt(*value, 10))
	}
	return q
}

func (q query) num(name string, value *float64) query {
	if value != nil {
		url.Values(q).Set(name, strconv.FormatFloat(*value, 'f', -1, 64))
	}
	return q
}

// Page picks a page of a listing: PageSize (nil: the server's default) and the PageToken of
// the page before (none: the first).
type Page struct {
	PageSize  *int64
	PageToken string
}

func (p Page) query() query {
	return query{}.int("pageSize", p.PageSize).str("pageToken", p.PageToken)
}

// pages is every item of a paged listing, each page fetched as the iteration reaches it.
func pages[P any, T any](ctx context.Context, first Page, fetch func(context.Context, Page) (*P, error),
	items func(*P) ([]T, *string)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		page := first
		for {
			got, err := fetch(ctx, page)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			list, next := items(got)
			for _, item := range list {
				if !yield(item, nil) {
					return
				}
			}
			if next == nil || *next == "" {
				return
			}
			page.PageToken = *next
		}
	}
}

// --- Sessions -------------------------------------------------------------------------------

// CreateSession makes a session; ErrSessionAlreadyExists if create.SessionID is taken.
func (c *Client) CreateSession(ctx context.Context, app, user string, create SessionCreate,
	options ...RequestOption) (*Session, error) {
	var session Session
	withIDs(create.Events)
	err := c.send(ctx, with(call{method: http.MethodPost, path: "/sessions", body: create}, options), &session, app, user)
	return answer(&session, err)
}

// SessionRead picks what a read of a session gives: the NumRecentEvents newest events (0:
// none), those at or after AfterTimestamp, the session as it was at UntilSeq; MinVersion, the
// version it must be at least (the client asks for its own writes' by itself). Nil: not asked.
type SessionRead struct {
	NumRecentEvents *int64
	AfterTimestamp  *float64
	UntilSeq        *int64
	MinVersion      *int64
}

// GetSession is the session with its events.
func (c *Client) GetSession(ctx context.Context, app, user, id string, read SessionRead,
	options ...RequestOption) (*Session, error) {
	q := query{}.int("numRecentEvents", read.NumRecentEvents).num("afterTimestamp", read.AfterTimestamp).
		int("untilSeq", read.UntilSeq).int("minVersion", read.MinVersion)
	var session Session
	err := c.send(ctx, with(call{method: http.MethodGet, query: url.Values(q)}, options), &session, app, user, id)
	return answer(&session, err)
}

// SessionFilter picks the sessions of a listing: in Order ("asc" or "desc" by last update),
// with every one of Labels, named DisplayName.
type SessionFilter struct {
	Page
	Order       string
	Labels      map[string]string
	DisplayName string
}

func (f SessionFilter) query() url.Values {
	q := f.Page.query().str("order", f.Order).str("displayName", f.DisplayName)
	for key, value := range f.Labels {
		url.Values(q).Add("label", key+":"+value)
	}
	return url.Values(q)
}

// ListSessions is a page of a user's sessions, without their events.
func (c *Client) ListSessions(ctx context.Context, app, user string, filter SessionFilter,
	options ...RequestOption) (*SessionPage, error) {
	var page SessionPage
	req := with(call{method: http.MethodGet, path: "/sessions", query: filter.query()}, options)
	err := c.send(ctx, req, &page, app, user)
	return answer(&page, err)
}

// Sessions is every session of a user, page by page.
func (c *Client) Sessions(ctx context.Context, app, user string, filter SessionFilter,
	options ...RequestOption) iter.Seq2[Session, error] {
	return pages(ctx, filter.Page, func(ctx context.Context, page Page) (*SessionPage, error) {
		filter.Page = page
		return c.ListSessions(ctx, app, user, filter, options...)
	}, func(p *SessionPage) ([]Session, *string) { return p.Sessions, p.NextPageToken })
}

// ListAppSessions is a page of the sessions of every user of the app.
func (c *Client) ListAppSessions(ctx context.Context, app string, filter SessionFilter,
	options ...RequestOption) (*SessionPage, error) {
	var page SessionPage
	err := c.send(ctx, with(call{method: http.MethodGet, path: "/sessions", query: filter.query()}, options), &page, app)
	return answer(&page, err)
}

// AppSessions is every session of every user of the app, page by page.
func (c *Client) AppSessions(ctx context.Context, app string, filter SessionFilter,
	options ...RequestOption) iter.Seq2[Session, error] {
	return pages(ctx, filter.Page, func(ctx context.Context, page Page) (*SessionPage, error) {
		filter.Page = page
		return c.ListAppSessions(ctx, app, filter, options...)
	}, func(p *SessionPage) ([]Session, *string) { return p.Sessions, p.NextPageToken })
}

// UpdateSession changes what update sets, in one write.
func (c *Client) UpdateSession(ctx context.Context, app, user, id string, update SessionUpdate,
	options ...WriteOption) (*Session, error) {
	var session Session
	err := c.send(ctx, with(call{method: http.MethodPatch, body: update}, options), &session, app, user, id)
	return answer(&session, err)
}

// UpdateState records stateDelta as an event by `user`.
func (c *Client) UpdateState(ctx context.Context, app, user, id string, stateDelta State,
	options ...WriteOption) (*Session, error) {
	return c.UpdateSession(ctx, app, user, id, SessionUpdate{StateDelta: stateDelta}, options...)
}

// DeleteSession deletes the session and its events (app and user state stay).
func (c *Client) DeleteSession(ctx context.Context, app, user, id string, options ...WriteOption) error {
	return c.send(ctx, with(call{method: http.MethodDelete}, options), nil, app, user, id)
}

// --- Events ---------------------------------------------------------------------------------

// withIDs gives each event without an id a new one, so that a resend stores it once.
func withIDs(events []Event) {
	for i := range events {
		if events[i].ID == "" {
			events[i].ID = newID()
		}
	}
}

// AppendEvent stores event (given an id when it has none) and is the event as stored, with its
// Seq. A resend after a lost answer gets the stored event back. A partial event is
// acknowledged, not stored: it comes back as sent, without a Seq.
func (c *Client) AppendEvent(ctx context.Context, app, user, id string, event Event,
	options ...WriteOption) (*Event, error) {
	if event.ID == "" {
		event.ID = newID()
	}
	var stored Event
	err := c.send(ctx, with(call{method: http.MethodPost, path: "/events", body: event}, options), &stored, app, user, id)
	return answer(&stored, err)
}

// AppendEvents stores events at consecutive seqs, all or none (partial ones skipped).
func (c *Client) AppendEvents(ctx context.Context, app, user, id string, events []Event,
	options ...WriteOption) ([]Event, error) {
	events = append([]Event(nil), events...)
	withIDs(events)
	var stored struct{ Events []Event }
	body := map[string][]Event{"events": events}
	req := with(call{method: http.MethodPost, path: "/events:batch", body: body}, options)
	err := c.send(ctx, req, &stored, app, user, id)
	return answer(stored.Events, err)
}

// EventFilter picks the events of a listing: after AfterSeq, at or after AfterTimestamp and
// before BeforeTimestamp, in Order ("asc", by seq, or "desc"); MinVersion as SessionRead's.
// Nil: not asked.
type EventFilter struct {
	Page
	AfterSeq        *int64
	AfterTimestamp  *float64
	BeforeTimestamp *float64
	Order           string
	MinVersion      *int64
}

// ListEvents is a page of the session's events.
func (c *Client) ListEvents(ctx context.Context, app, user, id string, filter EventFilter,
	options ...RequestOption) (*EventPage, error) {
	q := filter.Page.query().int("afterSeq", filter.AfterSeq).num("afterTimestamp", filter.AfterTimestamp).
		num("beforeTimestamp", filter.BeforeTimestamp).str("order", filter.Order).int("minVersion", filter.MinVersion)
	var page EventPage
	req := with(call{method: http.MethodGet, path: "/events", query: url.Values(q)}, options)
	err := c.send(ctx, req, &page, app, user, id)
	return answer(&page, err)
}

// Events is every event of the session, page by page.
func (c *Client) Events(ctx context.Context, app, user, id string, filter EventFilter,
	options ...RequestOption) iter.Seq2[Event, error] {
	return pages(ctx, filter.Page, func(ctx context.Context, page Page) (*EventPage, error) {
		filter.Page = page
		return c.ListEvents(ctx, app, user, id, filter, options...)
	}, func(p *EventPage) ([]Event, *string) { return p.Events, p.NextPageToken })
}

// CountEvents is how many events the session holds.
func (c *Client) CountEvents(ctx context.Context, app, user, id string, options ...RequestOption) (*EventCount, error) {
	var count EventCount
	err := c.send(ctx, with(call{method: http.MethodGet, path: "/events:count"}, options), &count, app, user, id)
	return answer(&count, err)
}

// RemoveEvent removes an event, and the events answering its function calls.
func (c *Client) RemoveEvent(ctx context.Context, app, user, id, eventID string,
	options ...WriteOption) (*EventsRemoved, error) {
	var removed EventsRemoved
	err := c.send(ctx, with(call{method: http.MethodDelete}, options), &removed, app, user, id, eventID)
	return answer(&removed, err)
}

// RewriteEvent replaces an event's content (a redaction, say); the event as stored.
func (c *Client) RewriteEvent(ctx context.Context, app, user, id, eventID string, content Content,
	options ...WriteOption) (*Event, error) {
	var event Event
	body := map[string]Content{"content": content}
	err := c.send(ctx, with(call{method: http.MethodPatch, body: body}, options), &event, app, user, id, eventID)
	return answer(&event, err)
}

// --- Forks, children and history -----------------------------------------------------------

// Fork is a new session with this one's events up to where fork says, and its state then.
func (c *Client) Fork(ctx context.Context, app, user, id string, fork SessionFork,
	options ...RequestOption) (*Session, error) {
	var session Session
	err := c.send(ctx, with(call{method: http.MethodPost, path: ":fork", body: fork}, options), &session, app, user, id)
	return answer(&session, err)
}

// CreateChild is a child session for a sub-agent.
func (c *Client) CreateChild(ctx context.Context, app, user, id string, child ChildCreate,
	options ...RequestOption) (*Session, error) {
	var session Session
	req := with(call{method: http.MethodPost, path: "/children", body: child}, options)
	err := c.send(ctx, req, &session, app, user, id)
	return answer(&session, err)
}

// ListChildren is a page of the session's forks and children.
func (c *Client) ListChildren(ctx context.Context, app, user, id string, page Page,
	options ...RequestOption) (*SessionPage, error) {
	var got SessionPage
	req := with(call{method: http.MethodGet, path: "/children", query: url.Values(page.query())}, options)
	err := c.send(ctx, req, &got, app, user, id)
	return answer(&got, err)
}

// Children is every fork and child of the session, page by page.
func (c *Client) Children(ctx context.Context, app, user, id string,
	options ...RequestOption) iter.Seq2[Session, error] {
	return pages(ctx, Page{}, func(ctx context.Context, page Page) (*SessionPage, error) {
		return c.ListChildren(ctx, app, user, id, page, options...)
	}, func(p *SessionPage) ([]Session, *string) { return p.Sessions, p.NextPageToken })
}

// Lineage is the session's ancestors, root first.
func (c *Client) Lineage(ctx context.Context, app, user, id string, options ...RequestOption) ([]Session, error) {
	var list struct{ Sessions []Session }
	err := c.send(ctx, with(call{method: http.MethodGet, path: "/lineage"}, options), &list, app, user, id)
	return answer(list.Sessions, err)
}

// CloseSession closes the session to writes with closing.Outcome; a child made for a function
// call answers it with closing.Result.
func (c *Client) CloseSession(ctx context.Context, app, user, id string, closing SessionClose,
	options ...WriteOption) (*Session, error) {
	var session Session
	req := with(call{method: http.MethodPost, path: ":close", body: closing}, options)
	err := c.send(ctx, req, &session, app, user, id)
	return answer(&session, err)
}

// Rewind appends ADK's rewind event, undoing rewind.BeforeInvocationID's events and those after.
func (c *Client) Rewind(ctx context.Context, app, user, id string, rewind SessionRewind,
	options ...WriteOption) (*Event, error) {
	var event Event
	err := c.send(ctx, with(call{method: http.MethodPost, path: ":rewind", body: rewind}, options), &event, app, user, id)
	return answer(&event, err)
}

// Trim removes all events but the newest trim.KeepLast.
func (c *Client) Trim(ctx context.Context, app, user, id string, trim SessionTrim,
	options ...WriteOption) (*Trimmed, error) {
	var trimmed Trimmed
	err := c.send(ctx, with(call{method: http.MethodPost, path: ":trim", body: trim}, options), &trimmed, app, user, id)
	return answer(&trimmed, err)
}

// Reset removes every event and the session's state.
func (c *Client) Reset(ctx context.Context, app, user, id string, options ...WriteOption) (*Trimmed, error) {
	var trimmed Trimmed
	req := with(call{method: http.MethodPost, path: ":reset", body: struct{}{}}, options)
	err := c.send(ctx, req, &trimmed, app, user, id)
	return answer(&trimmed, err)
}

// --- Context, tool calls, queued input -----------------------------------------------------

// ContextRead picks what a context view holds: the newest events that fit TokenBudget (nil:
// every live event).
type ContextRead struct {
	TokenBudget *int64
}

// Context is what a model should see next: the live events, compactions applied, function
// calls never apart from their answers.
func (c *Client) Context(ctx context.Context, app, user, id string, read ContextRead,
	options ...RequestOption) (*ContextView, error) {
	var view ContextView
	q := query{}.int("tokenBudget", read.TokenBudget)
	req := with(call{method: http.MethodGet, path: "/context", query: url.Values(q)}, options)
	err := c.send(ctx, req, &view, app, user, id)
	return answer(&view, err)
}

// Compact appends one compaction event; that event.
func (c *Client) Compact(ctx context.Context, app, user, id string, compact SessionCompact,
	options ...WriteOption) (*Event, error) {
	var event Event
	req := with(call{method: http.MethodPost, path: ":compact", body: compact}, options)
	err := c.send(ctx, req, &event, app, user, id)
	return answer(&event, err)
}

// ToolCallFilter picks the function calls of a listing: with Status ("answered", "pending",
// "orphaned"; "": any), each unanswered one orphaned past TimeoutSeconds (nil: the server's
// default; 0 orphans every one).
type ToolCallFilter struct {
	Status         string
	TimeoutSeconds *float64
}

// ToolCalls is the session's function calls in order, with their status.
func (c *Client) ToolCalls(ctx context.Context, app, user, id string, filter ToolCallFilter,
	options ...RequestOption) ([]ToolCall, error) {
	var list struct{ ToolCalls []ToolCall }
	q := query{}.str("status", filter.Status).num("timeoutSeconds", filter.TimeoutSeconds)
	req := with(call{method: http.MethodGet, path: "/toolCalls", query: url.Values(q)}, options)
	err := c.send(ctx, req, &list, app, user, id)
	return answer(list.ToolCalls, err)
}

// Heal answers each function call orphaned past heal.TimeoutSeconds with an error response, in
// one write.
func (c *Client) Heal(ctx context.Context, app, user, id string, heal SessionHeal,
	options ...WriteOption) (*Healed, error) {
	var healed Healed
	err := c.send(ctx, with(call{method: http.MethodPost, path: ":heal", body: heal}, options), &healed, app, user, id)
	return answer(&healed, err)
}

// QueueEvent queues an event apart from the log (a user typing while a turn runs), given an id
// when it has none; the event as queued.
func (c *Client) QueueEvent(ctx context.Context, app, user, id string, event Event,
	options ...RequestOption) (*Event, error) {
	if event.ID == "" {
		event.ID = newID()
	}
	var queued Event
	err := c.send(ctx, with(call{method: http.MethodPost, path: "/pending", body: event}, options), &queued, app, user, id)
	return answer(&queued, err)
}

// Pending is the queued events, in the order they came.
func (c *Client) Pending(ctx context.Context, app, user, id string, options ...RequestOption) ([]Event, error) {
	var list struct{ Events []Event }
	err := c.send(ctx, with(call{method: http.MethodGet, path: "/pending"}, options), &list, app, user, id)
	return answer(list.Events, err)
}

// ClearPending empties the queue without appending it.
func (c *Client) ClearPending(ctx context.Context, app, user, id string, options ...RequestOption) error {
	return c.send(ctx, with(call{method: http.MethodDelete, path: "/pending"}, options), nil, app, user, id)
}

// PromotePending appends the queue in order, in one write; ErrToolCallsPending while a
// function call is unanswered, unless promote.Force.
func (c *Client) PromotePending(ctx context.Context, app, user, id string, promote PendingPromote,
	options ...WriteOption) ([]Event, error) {
	var list struct{ Events []Event }
	req := with(call{method: http.MethodPost, path: "/pending:promote", body: promote}, options)
	err := c.send(ctx, req, &list, app, user, id)
	return answer(list.Events, err)
}

// --- Export and import ---------------------------------------------------------------------

// Export is the session as NDJSON, exactly: a header line, then its events as stored.
func (c *Client) Export(ctx context.Context, app, user, id string, options ...RequestOption) ([]byte, error) {
	path, err := pathTo(":export", app, user, id)
	if err != nil {
		return nil, err
	}
	// NDJSON, not the JSON document that `Accept: application/json` would choose.
	req := call{method: http.MethodGet, path: path, header: http.Header{"Accept": {"application/x-ndjson"}}}
	resp, err := c.do(ctx, with(req, options), nil)
	if err != nil {
		return nil, err
	}
	return answer(io.ReadAll(resp.Body))
}

// Import stores an export under this app and user exactly as it was, all or nothing; the
// same export again writes nothing. The session, without events.
func (c *Client) Import(ctx context.Context, app, user string, ndjson []byte,
	options ...RequestOption) (*Session, error) {
	var session Session
	req := call{method: http.MethodPost, path: "/sessions:import", raw: ndjson, ctype: "application/x-ndjson"}
	err := c.send(ctx, with(req, options), &session, app, user)
	return answer(&session, err)
}

// ExportUser is everything of a user of an app as NDJSON, from one snapshot: their state, each
// session as Export gives it, their `user:` artifacts, their memories (nothing at all for a
// user with nothing stored). Streamed: read it as it arrives (never held whole: an export may
// be larger than memory), into a file or straight into ImportUser, and close it when done.
// Opening it is sent again when that is safe, as reads are; reading it is the caller's, bounded
// by the context, not by Timeout.
func (c *Client) ExportUser(ctx context.Context, app, user string, options ...RequestOption) (io.ReadCloser, error) {
	path, err := pathTo(":export", app, user)
	if err != nil {
		return nil, err
	}
	req := call{method: http.MethodGet, path: path, header: http.Header{"Accept": {"application/x-ndjson"}},
		stream: true}
	resp, err := c.do(ctx, with(req, options), nil)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// ImportUser stores a user's export (ExportUser's NDJSON) under this app and user as it was,
// all or nothing, in one transaction: its sessions, state (merged: its keys win), `user:`
// artifacts and memories. The export is streamed as it is read, never held whole (read to its
// end and not closed: it is the caller's); its length is sent when it says it (a
// *bytes.Reader, *bytes.Buffer or *strings.Reader), else it is sent chunked. What was created
// and what was there already the same: the same export again creates nothing. Sent once, but
// after a refused connection, which read none of it; no Timeout bounds it, the context does.
// Anything stored under the same id and different is ErrSessionAlreadyExists,
// ErrMemoryAlreadyExists or ErrConflict (a `user:` artifact), and nothing is imported.
func (c *Client) ImportUser(ctx context.Context, app, user string, export io.Reader,
	options ...RequestOption) (*UserImport, error) {
	path, err := pathTo(":import", app, user)
	if err != nil {
		return nil, err
	}
	req := call{method: http.MethodPost, path: path, upload: export, size: lengthOf(export),
		ctype: "application/x-ndjson"}
	if export == nil {
		req.raw = []byte{}
	}
	var imported UserImport
	_, err = c.do(ctx, with(req, options), &imported)
	return answer(&imported, err)
}

// --- Search, usage, browsing ----------------------------------------------------------------

// SearchQuery is a search: Q, the words to find (web-search syntax: `refund order`,
// `"full refund"`, `refund or return`, `refund -partial`), in the events of a user, a session,
// an author, at or after AfterTimestamp and before BeforeTimestamp (nil: not asked).
type SearchQuery struct {
	Page
	Q               string
	UserID          string
	SessionID       string
	Author          string
	AfterTimestamp  *float64
	BeforeTimestamp *float64
}

// Search is a page of the app's events matching search.Q, best first.
func (c *Client) Search(ctx context.Context, app string, search SearchQuery,
	options ...RequestOption) (*SearchPage, error) {
	q := search.Page.query().str("q", search.Q).str("userId", search.UserID).str("sessionId", search.SessionID).
		str("author", search.Author).num("afterTimestamp", search.AfterTimestamp).num("beforeTimestamp", search.BeforeTimestamp)
	var page SearchPage
	err := c.send(ctx, with(call{method: http.MethodGet, path: "/search", query: url.Values(q)}, options), &page, app)
	return answer(&page, err)
}

// SearchHits is every hit of a search, page by page.
func (c *Client) SearchHits(ctx context.Context, app string, search SearchQuery,
	options ...RequestOption) iter.Seq2[SearchHit, error] {
	return pages(ctx, search.Page, func(ctx context.Context, page Page) (*SearchPage, error) {
		search.Page = page
		return c.Search(ctx, app, search, options...)
	}, func(p *SearchPage) ([]SearchHit, *string) { return p.Hits, p.NextPageToken })
}

// UsageFilter picks the events whose tokens are counted: UserID's ("": every user's), at or
// after AfterTimestamp and before BeforeTimestamp (nil: not asked).
type UsageFilter struct {
	UserID          string
	AfterTimestamp  *float64
	BeforeTimestamp *float64
}

// Usage is the token counts of the app's events, by user.
func (c *Client) Usage(ctx context.Context, app string, filter UsageFilter,
	options ...RequestOption) (*AppUsage, error) {
	q := query{}.str("userId", filter.UserID).num("afterTimestamp", filter.AfterTimestamp).
		num("beforeTimestamp", filter.BeforeTimestamp)
	var usage AppUsage
	err := c.send(ctx, with(call{method: http.MethodGet, path: "/usage", query: url.Values(q)}, options), &usage, app)
	return answer(&usage, err)
}

// ListApps is a page of the apps that have sessions, by name.
func (c *Client) ListApps(ctx context.Context, page Page, options ...RequestOption) (*AppPage, error) {
	var got AppPage
	_, err := c.do(ctx, with(call{method: http.MethodGet, path: "/apps", query: url.Values(page.query())}, options), &got)
	return answer(&got, err)
}

// Apps is every app that has sessions.
func (c *Client) Apps(ctx context.Context, options ...RequestOption) iter.Seq2[AppSummary, error] {
	return pages(ctx, Page{}, func(ctx context.Context, page Page) (*AppPage, error) {
		return c.ListApps(ctx, page, options...)
	}, func(p *AppPage) ([]AppSummary, *string) { return p.Apps, p.NextPageToken })
}

// ListUsers is a page of the app's users that have sessions, by id.
func (c *Client) ListUsers(ctx context.Context, app string, page Page, options ...RequestOption) (*UserPage, error) {
	var got UserPage
	req := with(call{method: http.MethodGet, path: "/users", query: url.Values(page.query())}, options)
	err := c.send(ctx, req, &got, app)
	return answer(&got, err)
}

// Users is every user of the app that has sessions.
func (c *Client) Users(ctx context.Context, app string, options ...RequestOption) iter.Seq2[UserSummary, error] {
	return pages(ctx, Page{}, func(ctx context.Context, page Page) (*UserPage, error) {
		return c.ListUsers(ctx, app, page, options...)
	}, func(p *UserPage) ([]UserSummary, *string) { return p.Users, p.NextPageToken })
}

// --- App and user state ---------------------------------------------------------------------

type scopeState struct {
	State State `json:"state"`
}

// AppState is the app's state, its keys without their `app:` prefix.
func (c *Client) AppState(ctx context.Context, app string, options ...RequestOption) (State, error) {
	var got scopeState
	err := c.send(ctx, with(call{method: http.MethodGet, path: "/state"}, options), &got, app)
	return answer(got.State, err)
}

// UpdateAppState merges stateDelta (keys without prefix) into the app's state; the state now.
func (c *Client) UpdateAppState(ctx context.Context, app string, stateDelta State,
	options ...RequestOption) (State, error) {
	var got scopeState
	body := map[string]State{"stateDelta": stateDelta}
	err := c.send(ctx, with(call{method: http.MethodPatch, path: "/state", body: body}, options), &got, app)
	return answer(got.State, err)
}

// UserState is the user's state, its keys without their `user:` prefix.
func (c *Client) UserState(ctx context.Context, app, user string, options ...RequestOption) (State, error) {
	var got scopeState
	err := c.send(ctx, with(call{method: http.MethodGet, path: "/state"}, options), &got, app, user)
	return answer(got.State, err)
}

// UpdateUserState merges stateDelta (keys without prefix) into the user's state; the state now.
func (c *Client) UpdateUserState(ctx context.Context, app, user string, stateDelta State,
	options ...RequestOption) (State, error) {
	var got scopeState
	body := map[string]State{"stateDelta": stateDelta}
	err := c.send(ctx, with(call{method: http.MethodPatch, path: "/state", body: body}, options), &got, app, user)
	return answer(got.State, err)
}

// --- Erasure --------------------------------------------------------------------------------

// EraseUser erases everything of a user of an app: every session with its events, the user's
// state, memories and artifacts, the API keys made for the user (an app-wide or admin key's
// call). From its start the user's writes fail with ErrUserErasing. The server answers 200
// with the erase done, or 202 with it still running (Status "running"), which GetErasure
// follows; both are the *Erasure, never an error. Erasing again erases what was written since.
func (c *Client) EraseUser(ctx context.Context, app, user string, options ...RequestOption) (*Erasure, error) {
	var erasure Erasure
	err := c.send(ctx, with(call{method: http.MethodDelete}, options), &erasure, app, user)
	return answer(&erasure, err)
}

// GetErasure is the user's latest erase, running (its progress so far) or done;
// ErrErasureNotFound if the user was never erased.
func (c *Client) GetErasure(ctx context.Context, app, user string, options ...RequestOption) (*Erasure, error) {
	var erasure Erasure
	err := c.send(ctx, with(call{method: http.MethodGet, path: "/erasure"}, options), &erasure, app, user)
	return answer(&erasure, err)
}

// EraseApp erases everything of an app (an admin key's call): what EraseUser erases, for every
// user of the app, and the app's own state, memories and keys. From its start writes that make
// something of the app fail with ErrAppErasing. The server answers 200 with the erase done, or
// 202 with it still running (Status "running"), which GetAppErasure follows; both are the
// *AppErasure, never an error. Erasing again erases what was written since.
func (c *Client) EraseApp(ctx context.Context, app string, options ...RequestOption) (*AppErasure, error) {
	var erasure AppErasure
	err := c.send(ctx, with(call{method: http.MethodDelete}, options), &erasure, app)
	return answer(&erasure, err)
}

// GetAppErasure is the app's latest erase (an admin key's call), running (its progress so far)
// or done; ErrErasureNotFound if the app was never erased.
func (c *Client) GetAppErasure(ctx context.Context, app string, options ...RequestOption) (*AppErasure, error) {
	var erasure AppErasure
	err := c.send(ctx, with(call{method: http.MethodGet, path: "/erasure"}, options), &erasure, app)
	return answer(&erasure, err)
}

// --- Operations ------------------------------------------------------------------------------

// AuditFilter picks audit records: App's, UserID's of App (a user is one of an app: UserID
// without App is refused), Action's ("session.delete"), at or after AfterTimestamp and before
// BeforeTimestamp (nil or "": not asked).
type AuditFilter struct {
	Page
	App             string
	UserID          string
	Action          string
	AfterTimestamp  *float64
	BeforeTimestamp *float64
}

// ListAuditRecords is a page of the audit log, newest first (an admin key only): session
// deletes, imports, keys made and revoked, retention sweeps.
func (c *Client) ListAuditRecords(ctx context.Context, filter AuditFilter,
	options ...RequestOption) (*AuditPage, error) {
	q := filter.Page.query().str("app", filter.App).str("userId", filter.UserID).str("action", filter.Action).
		num("afterTimestamp", filter.AfterTimestamp).num("beforeTimestamp", filter.BeforeTimestamp)
	var page AuditPage
	_, err := c.do(ctx, with(call{method: http.MethodGet, path: "/audit", query: url.Values(q)}, options), &page)
	return answer(&page, err)
}

// AuditRecords is every audit record of a filter, newest first, page by page.
func (c *Client) AuditRecords(ctx context.Context, filter AuditFilter,
	options ...RequestOption) iter.Seq2[AuditRecord, error] {
	return pages(ctx, filter.Page, func(ctx context.Context, page Page) (*AuditPage, error) {
		filter.Page = page
		return c.ListAuditRecords(ctx, filter, options...)
	}, func(p *AuditPage) ([]AuditRecord, *string) { return p.Records, p.NextPageToken })
}

// KeyScope is what the client's API key may do.
func (c *Client) KeyScope(ctx context.Context, options ...RequestOption) (*KeyScope, error) {
	var scope KeyScope
	_, err := c.do(ctx, with(call{method: http.MethodGet, path: "/auth/key"}, options), &scope)
	return answer(&scope, err)
}

// Health is /healthz: the process answers (it says nothing of the database).
func (c *Client) Health(ctx context.Context, options ...RequestOption) (*Health, error) {
	var health Health
	_, err := c.do(ctx, with(call{method: http.MethodGet, path: "/healthz"}, options), &health)
	return answer(&health, err)
}

// Readiness is /readyz: the database answers, at the expected schema; else ErrUnavailable.
func (c *Client) Readiness(ctx context.Context, options ...RequestOption) (*Readiness, error) {
	var ready Readiness
	_, err := c.do(ctx, with(call{method: http.MethodGet, path: "/readyz"}, options), &ready)
	return answer(&ready, err)
}

// Metrics is /metrics, in Prometheus' text format.
func (c *Client) Metrics(ctx context.Context, options ...RequestOption) (string, error) {
	resp, err := c.do(ctx, with(call{method: http.MethodGet, path: "/metrics"}, options), nil)
	if err != nil {
		return "", err
	}
	text, err := io.ReadAll(resp.Body)
	return answer(string(text), err)
}
