package adk

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"

	"google.golang.org/adk/v2/memory"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"sessionary.local/sessionary"
)

// MemoryService is ADK-Go's memory.Service backed by a Sessionary server, for the load_memory
// and preload_memory tools: what a user said in one session is recalled in the next, by
// meaning as well as by words, and the app's memories (facts every user shares) with it.
//
//	runner.Config{SessionService: adk.NewService(client), MemoryService: adk.NewMemoryService(client), …}
//
// AddSessionToMemory adds a session the server holds (by its app, user and id) with the
// server's remember: each event a memory that keeps no copy of its text and is forgotten with
// the session, those that SESSIONARY_MEMORY_FROM takes (by default, what the user said), each
// once, so a session is added as often as one likes. A session the server does not hold (one
// of another session service) is added as ADK-Go's in-memory service adds it: every event with
// text becomes a memory of its own, with its content, author, time and custom metadata; each
// once too, by an id made of the session's and the event's.
//
// SearchMemory recalls the user's memories and the app's that best answer the query, best
// first, by meaning and by words (the server's hybrid recall; WithRecall asks otherwise), as
// memory.Entry values: Content, Author, Timestamp (when it was said) and CustomMetadata (the
// memory's metadata) of each. Its ID is what ADK-Go's in-memory service gives: the id of the
// event it was learnt from (empty for an event that had none, whose memory names its session
// alone); a memory not learnt from one event (made with the client, say) gives its own id.
type MemoryService struct {
	client *sessionary.Client
	recall sessionary.RecallQuery
}

var _ memory.Service = (*MemoryService)(nil)

// MemoryOption configures a MemoryService.
type MemoryOption func(*MemoryService)

// WithRecall is what each search asks besides its query: a Mode ("words" matches words alone,
// as ADK-Go's in-memory service does; "meaning"), a Limit (the server's default is 10), a
// MinScore or MinSimilarity, Topics, IncludeApp (sessionary.Bool(false): the user's memories
// alone). Its Query is the search's.
func WithRecall(recall sessionary.RecallQuery) MemoryOption {
	return func(m *MemoryService) { m.recall = recall }
}

// NewMemoryService is a memory service that keeps its memories where client points.
func NewMemoryService(client *sessionary.Client, options ...MemoryOption) *MemoryService {
	m := &MemoryService{client: client}
	for _, option := range options {
		option(m)
	}
	return m
}

// eventTimestamp is the metadata key that keeps when an event was said, in epoch seconds, in
// a memory made of it by AddSessionToMemory: a memory of its own is timed by when it was made.
const eventTimestamp = "eventTimestamp"

// AddSessionToMemory adds the session's events to its user's memory.
func (m *MemoryService) AddSessionToMemory(ctx context.Context, s session.Session) error {
	_, err := m.client.Remember(ctx, s.AppName(), s.UserID(), s.ID(), sessionary.SessionRemember{})
	if !errors.Is(err, sessionary.ErrSessionNotFound) {
		return err
	}
	for i := range s.Events().Len() {
		event := s.Events().At(i)
		content := event.LLMResponse.Content
		if content == nil || textOf(content) == "" {
			continue
		}
		create, err := memoryOf(s.ID(), i, event)
		if err != nil {
			return err
		}
		_, err = m.client.CreateMemory(ctx, s.AppName(), s.UserID(), create)
		if err != nil && !errors.Is(err, sessionary.ErrMemoryAlreadyExists) { // added before
			return err
		}
	}
	return nil
}

// memoryOf is the memory of the ith event of a session the server does not hold. Its id is
// the same each time the session is added: the event's id hashed with the session's (or, for
// an event without one, its place and time).
func memoryOf(sessionID string, i int, event *session.Event) (sessionary.MemoryCreate, error) {
	key := event.ID
	if key == "" {
		key = fmt.Sprintf("#%d@%d", i, event.Timestamp.UnixNano())
	}
	sum := sha256.Sum256([]byte(sessionID + "\x00" + key))
	create := sessionary.MemoryCreate{ID: "adk-" + hex.EncodeToString(sum[:16]), Author: event.Author,
		Source: &sessionary.MemorySource{SessionID: sessionID}}
	if event.ID != "" {
		create.Source.EventIDs = []string{event.ID}
	}
	data, err := json.Marshal(event.LLMResponse.Content)
	if err == nil {
		err = json.Unmarshal(data, &create.Content)
	}
	if err != nil {
		return create, fmt.Errorf("the content of event %q: %w", event.ID, err)
	}
	if len(event.CustomMetadata) > 0 || !event.Timestamp.IsZero() {
		create.Metadata = maps.Clone(event.CustomMetadata)
		if create.Metadata == nil {
			create.Metadata = map[string]any{}
		}
		if !event.Timestamp.IsZero() {
			create.Metadata[eventTimestamp] = seconds(event.Timestamp)
		}
	}
	return create, nil
}

// textOf is the content's text parts, as the server reads a memory's.
func textOf(content *genai.Content) string {
	var text strings.Builder
	for _, part := range content.Parts {
		text.WriteString(part.Text)
	}
	return strings.TrimSpace(text.String())
}

// queryLength is the longest query the server takes, in characters: a longer one (a user's
// whole message, which preload_memory searches with) is cut to it.
const queryLength = 1000

// SearchMemory is the memories that best answer req.Query, best first; none for a query
// without words.
func (m *MemoryService) SearchMemory(ctx context.Context, req *memory.SearchRequest) (*memory.SearchResponse, error) {
	query := strings.TrimSpace(req.Query)
	if query == "" {
		return &memory.SearchResponse{}, nil
	}
	if runes := []rune(query); len(runes) > queryLength {
		query = string(runes[:queryLength])
	}
	recall := m.recall
	recall.Query = query
	found, err := m.client.RecallMemories(ctx, req.AppName, req.UserID, recall)
	if err != nil {
		return nil, err
	}
	response := &memory.SearchResponse{} // Memories nil when none, as ADK-Go's own answer
	for _, hit := range found.Memories {
		entry, err := entryOf(&hit.Memory)
		if err != nil {
			return nil, err
		}
		response.Memories = append(response.Memories, entry)
	}
	return response, nil
}

// entryOf is a memory as ADK-Go hands it to a model.
func entryOf(found *sessionary.Memory) (memory.Entry, error) {
	entry := memory.Entry{ID: found.ID, Timestamp: fromSeconds(found.Timestamp)}
	switch source := found.Source; {
	case source != nil && len(source.EventIDs) == 1:
		entry.ID = source.EventIDs[0]
	case source != nil && len(source.EventIDs) == 0: // an event without an id
		entry.ID = ""
	}
	if found.Author != nil {
		entry.Author = *found.Author
	}
	data, err := json.Marshal(found.Content)
	if err == nil {
		err = json.Unmarshal(data, &entry.Content)
	}
	if err != nil {
		return entry, fmt.Errorf("the content of memory %q: %w", found.ID, err)
	}
	metadata := maps.Clone(found.Metadata)
	if said, ok := metadata[eventTimestamp].(float64); ok && found.Kind == "text" {
		entry.Timestamp = fromSeconds(said)
		delete(metadata, eventTimestamp)
	}
	if len(metadata) > 0 {
		entry.CustomMetadata = metadata
	}
	return entry, nil
}
