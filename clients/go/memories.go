package sessionary

import (
	"context"
	"iter"
	"net/http"
	"net/url"
)

// Memories are what an agent recalls across sessions: a user's, or the app's (facts every user
// shares, recalled with each user's). Each method of a user's memories has a twin for the
// app's, named with App (CreateAppMemory, RecallAppMemories, ...), as ListAppSessions is
// ListSessions' twin: the app's are never reached by leaving the user out.

// memoryCall is send for the memories of a user (ids app, user) or of the app (ids app), at
// req.path under theirs; with memoryID, under that memory's path. An id refused before sending
// is the call's error.
func (c *Client) memoryCall(ctx context.Context, req call, out any, memoryID *string, ids ...string) error {
	if memoryID != nil {
		escaped, err := segment("memory_id", *memoryID)
		if err != nil {
			return err
		}
		req.path = "/memories/" + escaped + req.path
	}
	return c.send(ctx, req, out, ids...)
}

// CreateMemory remembers something of the user's: a Text, or ADK's Content (whose text parts
// are what is recalled), with metadata, topics and an expiry. The server embeds it in the
// background; it is recalled by words at once. ErrMemoryAlreadyExists if create.ID is taken.
// Sent once: a resend could make it twice.
func (c *Client) CreateMemory(ctx context.Context, app, user string, create MemoryCreate,
	options ...RequestOption) (*Memory, error) {
	var memory Memory
	err := c.memoryCall(ctx, with(call{method: http.MethodPost, path: "/memories", body: create}, options), &memory, nil, app, user)
	return answer(&memory, err)
}

// CreateAppMemory is CreateMemory for the app's memories, which every user's recall finds.
func (c *Client) CreateAppMemory(ctx context.Context, app string, create MemoryCreate,
	options ...RequestOption) (*Memory, error) {
	var memory Memory
	err := c.memoryCall(ctx, with(call{method: http.MethodPost, path: "/memories", body: create}, options), &memory, nil, app)
	return answer(&memory, err)
}

// MemoryFilter picks the memories of a listing: with Topic, learnt in SessionID, of Kind
// ("text": made by a create; "event": an event added to memory). "": not asked.
type MemoryFilter struct {
	Page
	Topic     string
	SessionID string
	Kind      string
}

func (f MemoryFilter) query() url.Values {
	return url.Values(f.Page.query().str("topic", f.Topic).str("sessionId", f.SessionID).str("kind", f.Kind))
}

// ListMemories is a page of the user's memories, the most recently changed first.
func (c *Client) ListMemories(ctx context.Context, app, user string, filter MemoryFilter,
	options ...RequestOption) (*MemoryPage, error) {
	var page MemoryPage
	req := with(call{method: http.MethodGet, path: "/memories", query: filter.query()}, options)
	err := c.memoryCall(ctx, req, &page, nil, app, user)
	return answer(&page, err)
}

// Memories is every memory of the user, page by page.
func (c *Client) Memories(ctx context.Context, app, user string, filter MemoryFilter,
	options ...RequestOption) iter.Seq2[Memory, error] {
	return pages(ctx, filter.Page, func(ctx context.Context, page Page) (*MemoryPage, error) {
		filter.Page = page
		return c.ListMemories(ctx, app, user, filter, options...)
	}, func(p *MemoryPage) ([]Memory, *string) { return p.Memories, p.NextPageToken })
}

// ListAppMemories is a page of the app's memories, the most recently changed first.
func (c *Client) ListAppMemories(ctx context.Context, app string, filter MemoryFilter,
	options ...RequestOption) (*MemoryPage, error) {
	var page MemoryPage
	req := with(call{method: http.MethodGet, path: "/memories", query: filter.query()}, options)
	err := c.memoryCall(ctx, req, &page, nil, app)
	return answer(&page, err)
}

// AppMemories is every memory of the app, page by page.
func (c *Client) AppMemories(ctx context.Context, app string, filter MemoryFilter,
	options ...RequestOption) iter.Seq2[Memory, error] {
	return pages(ctx, filter.Page, func(ctx context.Context, page Page) (*MemoryPage, error) {
		filter.Page = page
		return c.ListAppMemories(ctx, app, filter, options...)
	}, func(p *MemoryPage) ([]Memory, *string) { return p.Memories, p.NextPageToken })
}

// RecallMemories is the user's memories (and the app's, unless recall.IncludeApp is false)
// that best answer recall.Query, best first: by meaning and by words, fused into one ranking.
// A memory not embedded yet is recalled by words alone; without pgvector, or with the model
// down, every one is, and the result's Note says so. A read: sent again when that is safe.
func (c *Client) RecallMemories(ctx context.Context, app, user string, recall RecallQuery,
	options ...RequestOption) (*RecallResult, error) {
	var result RecallResult
	req := with(call{method: http.MethodPost, path: "/memories:recall", body: recall}, options)
	err := c.memoryCall(ctx, req, &result, nil, app, user)
	return answer(&result, err)
}

// RecallAppMemories is RecallMemories of the app's memories alone.
func (c *Client) RecallAppMemories(ctx context.Context, app string, recall RecallQuery,
	options ...RequestOption) (*RecallResult, error) {
	var result RecallResult
	req := with(call{method: http.MethodPost, path: "/memories:recall", body: recall}, options)
	err := c.memoryCall(ctx, req, &result, nil, app)
	return answer(&result, err)
}

// GetMemory is one of the user's memories as it is now; its Revision is what IfMatch takes.
func (c *Client) GetMemory(ctx context.Context, app, user, id string, options ...RequestOption) (*Memory, error) {
	var memory Memory
	err := c.memoryCall(ctx, with(call{method: http.MethodGet}, options), &memory, &id, app, user)
	return answer(&memory, err)
}

// GetAppMemory is one of the app's memories as it is now.
func (c *Client) GetAppMemory(ctx context.Context, app, id string, options ...RequestOption) (*Memory, error) {
	var memory Memory
	err := c.memoryCall(ctx, with(call{method: http.MethodGet}, options), &memory, &id, app)
	return answer(&memory, err)
}

// UpdateMemory changes what update sets, the rest kept, as the memory's next revision; with
// IfMatch(revision), only if it is still at that revision (else ErrStaleMemory, and nothing
// changes). A memory of an event takes its text from the event: only its metadata, topics and
// expiry change. Sent once: a resend would make another revision.
func (c *Client) UpdateMemory(ctx context.Context, app, user, id string, update MemoryUpdate,
	options ...WriteOption) (*Memory, error) {
	var memory Memory
	err := c.memoryCall(ctx, with(call{method: http.MethodPatch, body: update}, options), &memory, &id, app, user)
	return answer(&memory, err)
}

// UpdateAppMemory is UpdateMemory of one of the app's memories.
func (c *Client) UpdateAppMemory(ctx context.Context, app, id string, update MemoryUpdate,
	options ...WriteOption) (*Memory, error) {
	var memory Memory
	err := c.memoryCall(ctx, with(call{method: http.MethodPatch, body: update}, options), &memory, &id, app)
	return answer(&memory, err)
}

// DeleteMemory forgets one of the user's memories, its revisions and its vectors; with
// IfMatch(revision), only if it is still at that revision. Sent once: a resend would answer
// ErrMemoryNotFound for a delete that was done.
func (c *Client) DeleteMemory(ctx context.Context, app, user, id string, options ...WriteOption) error {
	return c.memoryCall(ctx, with(call{method: http.MethodDelete}, options), nil, &id, app, user)
}

// DeleteAppMemory is DeleteMemory of one of the app's memories.
func (c *Client) DeleteAppMemory(ctx context.Context, app, id string, options ...WriteOption) error {
	return c.memoryCall(ctx, with(call{method: http.MethodDelete}, options), nil, &id, app)
}

// ListMemoryRevisions is a page of the memory's revisions, newest (the current one) first.
func (c *Client) ListMemoryRevisions(ctx context.Context, app, user, id string, page Page,
	options ...RequestOption) (*MemoryRevisionPage, error) {
	var got MemoryRevisionPage
	req := with(call{method: http.MethodGet, path: "/revisions", query: url.Values(page.query())}, options)
	err := c.memoryCall(ctx, req, &got, &id, app, user)
	return answer(&got, err)
}

// MemoryRevisions is every revision of the user's memory, newest first, page by page.
func (c *Client) MemoryRevisions(ctx context.Context, app, user, id string,
	options ...RequestOption) iter.Seq2[MemoryRevision, error] {
	return pages(ctx, Page{}, func(ctx context.Context, page Page) (*MemoryRevisionPage, error) {
		return c.ListMemoryRevisions(ctx, app, user, id, page, options...)
	}, func(p *MemoryRevisionPage) ([]MemoryRevision, *string) { return p.Revisions, p.NextPageToken })
}

// ListAppMemoryRevisions is ListMemoryRevisions of one of the app's memories.
func (c *Client) ListAppMemoryRevisions(ctx context.Context, app, id string, page Page,
	options ...RequestOption) (*MemoryRevisionPage, error) {
	var got MemoryRevisionPage
	req := with(call{method: http.MethodGet, path: "/revisions", query: url.Values(page.query())}, options)
	err := c.memoryCall(ctx, req, &got, &id, app)
	return answer(&got, err)
}

// AppMemoryRevisions is every revision of the app's memory, newest first, page by page.
func (c *Client) AppMemoryRevisions(ctx context.Context, app, id string,
	options ...RequestOption) iter.Seq2[MemoryRevision, error] {
	return pages(ctx, Page{}, func(ctx context.Context, page Page) (*MemoryRevisionPage, error) {
		return c.ListAppMemoryRevisions(ctx, app, id, page, options...)
	}, func(p *MemoryRevisionPage) ([]MemoryRevision, *string) { return p.Revisions, p.NextPageToken })
}

// RollBackMemory restores revision rollback.Revision of the user's memory as its next
// revision (nothing is lost); with IfMatch(revision), only if it is still at that revision.
// ErrMemoryNotFound if it has no such revision. Sent once.
func (c *Client) RollBackMemory(ctx context.Context, app, user, id string, rollback MemoryRollback,
	options ...WriteOption) (*Memory, error) {
	var memory Memory
	req := with(call{method: http.MethodPost, path: ":rollback", body: rollback}, options)
	err := c.memoryCall(ctx, req, &memory, &id, app, user)
	return answer(&memory, err)
}

// RollBackAppMemory is RollBackMemory of one of the app's memories.
func (c *Client) RollBackAppMemory(ctx context.Context, app, id string, rollback MemoryRollback,
	options ...WriteOption) (*Memory, error) {
	var memory Memory
	req := with(call{method: http.MethodPost, path: ":rollback", body: rollback}, options)
	err := c.memoryCall(ctx, req, &memory, &id, app)
	return answer(&memory, err)
}

// Remember adds the session's events to its user's memory (ADK's add_session_to_memory, and
// with remember.EventIDs its add_events_to_memory): each a memory of kind "event" that keeps
// no copy of the event's text and is forgotten with the session. Without EventIDs, every event
// with text that the server's SESSIONARY_MEMORY_FROM takes (by default, what the user said).
// Each event is added once, so a resend (it is sent again when that is safe) or a later call
// adds only what is new, and Remembered counts that.
func (c *Client) Remember(ctx context.Context, app, user, id string, remember SessionRemember,
	options ...RequestOption) (*Remembered, error) {
	var remembered Remembered
	req := with(call{method: http.MethodPost, path: ":remember", body: remember}, options)
	err := c.send(ctx, req, &remembered, app, user, id)
	return answer(&remembered, err)
}

// EmbeddingsStatus is /embeddings: how memories are recalled now (by meaning and words, or by
// words alone, and why), the model that embeds them, and how many wait to be embedded.
func (c *Client) EmbeddingsStatus(ctx context.Context, options ...RequestOption) (*EmbeddingsStatus, error) {
	var status EmbeddingsStatus
	_, err := c.do(ctx, with(call{method: http.MethodGet, path: "/embeddings"}, options), &status)
	return answer(&status, err)
}
