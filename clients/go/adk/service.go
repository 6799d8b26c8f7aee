// Package adk is ADK-Go's session.Service backed by a Sessionary server, so that an ADK-Go
// runner keeps its sessions there, and any number of processes resume each other's; its
// artifact.Service (ArtifactService), which keeps their artifacts with them; and its
// memory.Service (MemoryService), which recalls what users said by meaning and by words:
//
//	client, _ := sessionary.New(sessionary.Options{})
//	r, _ := runner.New(runner.Config{AppName: "assistant", Agent: agent, SessionService: adk.NewService(client),
//		ArtifactService: adk.NewArtifactService(client), MemoryService: adk.NewMemoryService(client)})
//
// It keeps the contract of ADK-Go's own services: Get fails for a missing session, Create for
// an id taken; Delete of a missing session is no error; AppendEvent skips partial events,
// applies `temp:` keys to the live session and strips them from the stored event, and fails
// with a stale-session error (errors.Is(err, sessionary.ErrStaleSession)) when the session was
// written elsewhere since it was loaded: the append carries the version it was loaded at as
// If-Match.
//
// A runner loads the whole session at the start of every turn; the service keeps the events
// of the sessions it read whole (WithCachedEvents bounds them), so that such a load asks the
// server only for the newest events and costs what is new, not the session's length.
package adk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/adk/v2/session"

	"sessionary.local/sessionary"
)

// Service is a session.Service over a Sessionary client; safe for concurrent use.
type Service struct {
	client *sessionary.Client
	loaded *loaded
}

var _ session.Service = (*Service)(nil)

// Option configures a Service.
type Option func(*Service)

// WithCachedEvents bounds the events the service keeps from whole reads of sessions, the least
// recently read session's dropped first (default 100,000; 0: every read is whole).
func WithCachedEvents(n int) Option {
	return func(s *Service) { s.loaded.limit = max(n, 0) }
}

// NewService is a session service that keeps its sessions where client points.
func NewService(client *sessionary.Client, options ...Option) *Service {
	s := &Service{client: client, loaded: newLoaded(100_000)}
	for _, option := range options {
		option(s)
	}
	return s
}

func (s *Service) Create(ctx context.Context, req *session.CreateRequest) (*session.CreateResponse, error) {
	if req.AppName == "" || req.UserID == "" {
		return nil, fmt.Errorf("app_name and user_id are required, got app_name: %q, user_id: %q", req.AppName, req.UserID)
	}
	created, err := s.client.CreateSession(ctx, req.AppName, req.UserID,
		sessionary.SessionCreate{SessionID: req.SessionID, State: req.State})
	if errors.Is(err, sessionary.ErrSessionAlreadyExists) {
		return nil, fmt.Errorf("session %s already exists: %w", req.SessionID, err)
	}
	if err != nil {
		return nil, err
	}
	stored, err := fromWire(created)
	if err != nil {
		return nil, err
	}
	return &session.CreateResponse{Session: stored}, nil
}

func (s *Service) Get(ctx context.Context, req *session.GetRequest) (*session.GetResponse, error) {
	if req.AppName == "" || req.UserID == "" || req.SessionID == "" {
		return nil, fmt.Errorf("app_name, user_id, session_id are required, got app_name: %q, user_id: %q, session_id: %q",
			req.AppName, req.UserID, req.SessionID)
	}
	key := sessionKey{req.AppName, req.UserID, req.SessionID}
	var found *sessionary.Session
	var events []*session.Event
	var err error
	if req.NumRecentEvents == 0 && req.After.IsZero() {
		found, events, err = s.whole(ctx, key)
	} else {
		var read sessionary.SessionRead // ADK's zero values ask nothing, as its own services read them
		if req.NumRecentEvents > 0 {
			read.NumRecentEvents = sessionary.Int64(int64(req.NumRecentEvents))
		}
		if !req.After.IsZero() {
			read.AfterTimestamp = sessionary.Float64(seconds(req.After))
		}
		found, events, err = s.read(ctx, key, read)
	}
	if errors.Is(err, sessionary.ErrSessionNotFound) {
		s.loaded.drop(key)
	}
	if err != nil {
		return nil, err
	}
	// Clipped, the session's own appends go to an array of its own, never to the kept one.
	return &session.GetResponse{Session: newSession(found, slices.Clip(events))}, nil
}

// The newest events a load of a session asks for when the service kept the rest.
const recent = 32

// whole is the session with all its events. When the service kept them from an earlier read,
// it asks only for the newest, and reads the session whole again unless appends alone came
// since.
func (s *Service) whole(ctx context.Context, key sessionKey) (*sessionary.Session, []*session.Event, error) {
	if kept, ok := s.loaded.get(key); ok {
		newest := sessionary.SessionRead{NumRecentEvents: sessionary.Int64(recent)}
		found, err := s.client.GetSession(ctx, key.app, key.user, key.id, newest)
		if err != nil {
			return nil, nil, err
		}
		if added, ok := kept.appended(found); ok {
			decoded, err := decode(found.ID, added)
			if err != nil {
				return nil, nil, err
			}
			events := slices.Concat(kept.events, decoded)
			s.loaded.put(key, found, events)
			return found, events, nil
		}
	}
	found, events, err := s.read(ctx, key, sessionary.SessionRead{})
	if err == nil {
		s.loaded.put(key, found, events)
	}
	return found, events, err
}

func (s *Service) read(ctx context.Context, key sessionKey, read sessionary.SessionRead) (*sessionary.Session, []*session.Event, error) {
	found, err := s.client.GetSession(ctx, key.app, key.user, key.id, read)
	if err != nil {
		return nil, nil, err
	}
	events, err := decode(found.ID, found.Events)
	return found, events, err
}

// List is the user's sessions, or with no UserID every user's of the app, without events.
func (s *Service) List(ctx context.Context, req *session.ListRequest) (*session.ListResponse, error) {
	if req.AppName == "" {
		return nil, fmt.Errorf("app_name is required, got app_name: %q", req.AppName)
	}
	filter := sessionary.SessionFilter{Page: sessionary.Page{PageSize: sessionary.Int64(1000)}}
	all := s.client.AppSessions(ctx, req.AppName, filter)
	if req.UserID != "" {
		all = s.client.Sessions(ctx, req.AppName, req.UserID, filter)
	}
	sessions := []session.Session{}
	for found, err := range all {
		if err != nil {
			return nil, err
		}
		stored, err := fromWire(&found)
		if err != nil {
			return nil, err
		}
		sessions = append(sessions, stored)
	}
	return &session.ListResponse{Sessions: sessions}, nil
}

// Delete deletes the session and its events; a missing one is no error, as with ADK's own.
func (s *Service) Delete(ctx context.Context, req *session.DeleteRequest) error {
	if req.AppName == "" || req.UserID == "" || req.SessionID == "" {
		return fmt.Errorf("app_name, user_id, session_id are required, got app_name: %q, user_id: %q, session_id: %q",
			req.AppName, req.UserID, req.SessionID)
	}
	s.loaded.drop(sessionKey{req.AppName, req.UserID, req.SessionID})
	err := s.client.DeleteSession(ctx, req.AppName, req.UserID, req.SessionID)
	if errors.Is(err, sessionary.ErrSessionNotFound) {
		return nil
	}
	return err
}

// AppendEvent stores event and adds it to the live session, as ADK's own services do: a
// partial event is skipped; `temp:` keys reach the live session's state (later agents of the
// invocation read them) and never the store.
func (s *Service) AppendEvent(ctx context.Context, current session.Session, event *session.Event) error {
	if current == nil {
		return fmt.Errorf("session is nil")
	}
	if event == nil {
		return fmt.Errorf("event is nil")
	}
	if event.Partial {
		return nil
	}
	event.Timestamp = event.Timestamp.Truncate(time.Microsecond) // as stored
	live, ours := current.(*Session)
	version := sessionary.IfExists()
	if ours {
		live.apply(event)
		version = sessionary.IfMatch(live.loaded())
	}
	event.Actions.StateDelta = withoutTemp(event.Actions.StateDelta)
	sent, err := toWire(event)
	if err != nil {
		return err
	}
	stored, err := s.client.AppendEvent(ctx, current.AppName(), current.UserID(), current.ID(), sent, version)
	switch {
	case errors.Is(err, sessionary.ErrStaleSession):
		return fmt.Errorf("stale session error: the session was written elsewhere since it was loaded; "+
			"reload it before appending more events: %w", err)
	case errors.Is(err, sessionary.ErrSessionNotFound):
		return fmt.Errorf("session %s not found, cannot apply event: %w", current.ID(), err)
	case err != nil:
		return err
	}
	if ours {
		live.stored(event.Timestamp, stored.Seq)
	}
	return nil
}

func withoutTemp(delta map[string]any) map[string]any {
	if len(delta) == 0 {
		return delta
	}
	kept := make(map[string]any, len(delta))
	for key, value := range delta {
		if !strings.HasPrefix(key, session.KeyPrefixTemp) {
			kept[key] = value
		}
	}
	return kept
}

// Session is a session as this service reads it: a session.Session that knows the version it
// was loaded at.
type Session struct {
	id, appName, userID string

	mu        sync.RWMutex
	state     map[string]any
	events    []*session.Event
	updatedAt time.Time
	version   int64
}

func (s *Session) ID() string      { return s.id }
func (s *Session) AppName() string { return s.appName }
func (s *Session) UserID() string  { return s.userID }

func (s *Session) State() session.State { return state{s} }

func (s *Session) Events() session.Events {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return events(s.events)
}

func (s *Session) LastUpdateTime() time.Time {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.updatedAt
}

// Version is the session's version on the server when it was read or last appended to.
func (s *Session) Version() int64 { return s.loaded() }

func (s *Session) loaded() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.version
}

// apply adds the event to the live session: its whole state delta (`temp:` keys too), and the
// event itself, which its caller then strips of those keys.
func (s *Session) apply(event *session.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	maps.Copy(s.state, event.Actions.StateDelta)
	s.events = append(s.events, event)
}

func (s *Session) stored(at time.Time, version int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.updatedAt = at
	s.version = max(s.version, version)
}

type state struct{ s *Session }

func (st state) Get(key string) (any, error) {
	st.s.mu.RLock()
	defer st.s.mu.RUnlock()
	value, ok := st.s.state[key]
	if !ok {
		return nil, session.ErrStateKeyNotExist
	}
	return value, nil
}

func (st state) Set(key string, value any) error {
	st.s.mu.Lock()
	defer st.s.mu.Unlock()
	st.s.state[key] = value
	return nil
}

func (st state) All() iter.Seq2[string, any] {
	st.s.mu.RLock()
	copied := maps.Clone(st.s.state)
	st.s.mu.RUnlock()
	return maps.All(copied)
}

type events []*session.Event

func (e events) All() iter.Seq[*session.Event] {
	return func(yield func(*session.Event) bool) {
		for _, event := range e {
			if !yield(event) {
				return
			}
		}
	}
}

func (e events) Len() int { return len(e) }

func (e events) At(i int) *session.Event {
	if i >= 0 && i < len(e) {
		return e[i]
	}
	return nil
}

func fromWire(read *sessionary.Session) (*Session, error) {
	events, err := decode(read.ID, read.Events)
	if err != nil {
		return nil, err
	}
	return newSession(read, events), nil
}

// newSession is the session read, with events its events.
func newSession(read *sessionary.Session, events []*session.Event) *Session {
	s := &Session{id: read.ID, appName: read.AppName, userID: read.UserID, state: read.State,
		events: events, updatedAt: fromSeconds(read.LastUpdateTime), version: read.Version}
	if s.state == nil {
		s.state = map[string]any{}
	}
	return s
}

func decode(sessionID string, stored []sessionary.Event) ([]*session.Event, error) {
	events := make([]*session.Event, 0, len(stored))
	for _, sent := range stored {
		event, err := fromWireEvent(sent)
		if err != nil {
			return nil, fmt.Errorf("session %s, event %s: %w", sessionID, sent.ID, err)
		}
		events = append(events, event)
	}
	return events, nil
}

// toWire is the event in the camelCase JSON that ADK's Python events are stored in, so that
// agents of either language read each other's sessions. It is ADK-Go's own fields, named as
// Python's alias generator names the same fields (InvocationID: invocationId), its timestamp in
// epoch seconds, the zero ones left out (Python's events forbid fields they lack). Each value
// is encoded by its own type (genai's are tagged camelCase already). The versions of its
// artifactDelta are counted as ADK's Python services and the server count them, from 0.
func toWire(e *session.Event) (sessionary.Event, error) {
	fields := camelFields(reflect.ValueOf(*e), map[string]any{})
	fields["timestamp"] = seconds(e.Timestamp) // the zero time too: it is stored as year 1
	if actions, ok := fields["actions"].(map[string]any); ok && e.Actions.ArtifactDelta != nil {
		actions["artifactDelta"] = counted(e.Actions.ArtifactDelta, -1)
	}
	data, err := json.Marshal(fields)
	var sent sessionary.Event
	if err == nil {
		err = json.Unmarshal(data, &sent)
	}
	return sent, err
}

// camelFields adds the struct's fields that are not zero to fields, by their camelCase names:
// an embedded struct's (LLMResponse) as the struct's own, a struct of untagged fields
// (Actions) as an object of its own camelCase fields.
func camelFields(v reflect.Value, fields map[string]any) map[string]any {
	for i := range v.NumField() {
		field, value := v.Type().Field(i), v.Field(i)
		name, _, _ := strings.Cut(field.Tag.Get("json"), ",")
		switch {
		case field.Anonymous:
			camelFields(value, fields)
		case !field.IsExported() || name == "-" || value.IsZero(): // as encoding/json leaves them out
		case name != "":
			fields[name] = value.Interface()
		case value.Kind() == reflect.Struct && field.Type != reflect.TypeFor[time.Time]():
			fields[camelCase(field.Name)] = camelFields(value, map[string]any{})
		default:
			fields[camelCase(field.Name)] = value.Interface()
		}
	}
	return fields
}

// camelCase is a Go field's name as Python's alias generator names the field: ID is id,
// LongRunningToolIDs longRunningToolIds.
func camelCase(name string) string {
	name = strings.ReplaceAll(name, "ID", "Id")
	return strings.ToLower(name[:1]) + name[1:]
}

// fromWireEvent reads a stored event into ADK-Go's own type, whose field names encoding/json
// matches without regard to case (invocationId: InvocationID); the timestamp is epoch seconds.
func fromWireEvent(stored sessionary.Event) (*session.Event, error) {
	data, err := json.Marshal(stored)
	if err != nil {
		return nil, err
	}
	var read struct {
		session.Event
		Timestamp float64 // the event's, which it hides
	}
	if err := json.Unmarshal(data, &read); err != nil {
		return nil, err
	}
	read.Event.Timestamp = fromSeconds(read.Timestamp)
	read.Event.Actions.ArtifactDelta = counted(read.Event.Actions.ArtifactDelta, 1)
	return &read.Event, nil
}

// counted is an artifactDelta with each version moved by by: ADK-Go counts an artifact's
// versions from 1 (its 0 means the newest), ADK's Python services and Sessionary from 0. So
// the server's rewind restores the versions an ADK-Go agent's events name, and agents of
// either language read each other's.
func counted(delta map[string]int64, by int64) map[string]int64 {
	if delta == nil {
		return nil
	}
	moved := make(map[string]int64, len(delta))
	for name, version := range delta {
		moved[name] = version + by
	}
	return moved
}

// seconds is a time as the server keeps it: epoch seconds, to the microsecond. The zero time
// is year 1, which the server takes, so it comes back zero.
func seconds(t time.Time) float64 { return float64(t.UnixMicro()) / 1e6 }

func fromSeconds(s float64) time.Time { return time.UnixMicro(int64(math.Round(s * 1e6))).UTC() }
