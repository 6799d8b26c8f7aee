package sessionary

import (
	"encoding/json"
	"reflect"
	"strings"
	"sync"
)

// State is a session's, a user's or an app's state: JSON values by key.
type State = map[string]any

// Event is one entry of a session's log, as ADK shapes it. The fields the server reads are
// typed; every other field an agent framework sends (`branch`, `turnComplete`,
// `usageMetadata`, ...) is kept in Extra, stored and given back as it was.
type Event struct {
	// ID is given by the client when empty (a random one), so that a resend stores it once.
	ID           string `json:"id,omitempty"`
	Author       string `json:"author,omitempty"`
	InvocationID string `json:"invocationId,omitempty"`
	// Timestamp in epoch seconds; 0 when sent: the server's clock.
	Timestamp float64       `json:"timestamp,omitempty"`
	Partial   bool          `json:"partial,omitempty"`
	Content   *Content      `json:"content,omitempty"`
	Actions   *EventActions `json:"actions,omitempty"`
	// Seq is the event's place in the session's log, set by the server (0 on a partial event).
	Seq   int64                      `json:"seq,omitempty"`
	Extra map[string]json.RawMessage `json:"-"`
}

// EventActions are what an event does besides saying something.
type EventActions struct {
	// StateDelta: `app:` and `user:` keys update the app's and the user's state, `temp:` keys
	// are dropped, the others update the session's.
	StateDelta State `json:"stateDelta,omitempty"`
	// RewindBeforeInvocationID marks ADK's rewind (the context view leaves out what it undid).
	RewindBeforeInvocationID string                     `json:"rewindBeforeInvocationId,omitempty"`
	Compaction               *EventCompaction           `json:"compaction,omitempty"`
	Extra                    map[string]json.RawMessage `json:"-"`
}

// EventCompaction is a compaction event's summary of the events it stands for.
type EventCompaction struct {
	StartTimestamp   float64 `json:"startTimestamp"`
	EndTimestamp     float64 `json:"endTimestamp"`
	CompactedContent Content `json:"compactedContent"`
}

// Content is a message: its role ("user", "model") and parts.
type Content struct {
	Role  string                     `json:"role,omitempty"`
	Parts []Part                     `json:"parts"`
	Extra map[string]json.RawMessage `json:"-"`
}

// Part is one piece of a message: text, a function call or its response; other kinds
// (inlineData, thought, ...) are kept in Extra.
type Part struct {
	Text             string                     `json:"text,omitempty"`
	FunctionCall     *FunctionCall              `json:"functionCall,omitempty"`
	FunctionResponse *FunctionResponse          `json:"functionResponse,omitempty"`
	Extra            map[string]json.RawMessage `json:"-"`
}

// FunctionCall is a model's call of a tool.
type FunctionCall struct {
	ID   string         `json:"id,omitempty"`
	Name string         `json:"name"`
	Args map[string]any `json:"args,omitempty"`
}

// FunctionResponse is a tool's answer to the call of the same ID.
type FunctionResponse struct {
	ID       string         `json:"id,omitempty"`
	Name     string         `json:"name"`
	Response map[string]any `json:"response,omitempty"`
}

// Text is a message of one text part.
func Text(role, text string) *Content {
	return &Content{Role: role, Parts: []Part{{Text: text}}}
}

// Text is the message's text parts, joined.
func (c *Content) Text() string {
	if c == nil {
		return ""
	}
	var text strings.Builder
	for _, part := range c.Parts {
		text.WriteString(part.Text)
	}
	return text.String()
}

func (e Event) MarshalJSON() ([]byte, error) {
	type plain Event
	return marshalOpen(plain(e), e.Extra)
}

func (e *Event) UnmarshalJSON(data []byte) error {
	type plain Event
	return unmarshalOpen(data, (*plain)(e), &e.Extra)
}

func (a EventActions) MarshalJSON() ([]byte, error) {
	type plain EventActions
	return marshalOpen(plain(a), a.Extra)
}

func (a *EventActions) UnmarshalJSON(data []byte) error {
	type plain EventActions
	return unmarshalOpen(data, (*plain)(a), &a.Extra)
}

func (c Content) MarshalJSON() ([]byte, error) {
	type plain Content
	return marshalOpen(plain(c), c.Extra)
}

func (c *Content) UnmarshalJSON(data []byte) error {
	type plain Content
	return unmarshalOpen(data, (*plain)(c), &c.Extra)
}

func (p Part) MarshalJSON() ([]byte, error) {
	type plain Part
	return marshalOpen(plain(p), p.Extra)
}

func (p *Part) UnmarshalJSON(data []byte) error {
	type plain Part
	return unmarshalOpen(data, (*plain)(p), &p.Extra)
}

// marshalOpen is the JSON object of a struct's fields and, beside them, its Extra ones.
func marshalOpen(known any, extra map[string]json.RawMessage) ([]byte, error) {
	data, err := json.Marshal(known)
	if err != nil || len(extra) == 0 {
		return data, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return nil, err
	}
	for name, value := range extra {
		if _, typed := fields[name]; !typed && !typedField(reflect.TypeOf(known), name) {
			fields[name] = value
		}
	}
	return json.Marshal(fields)
}

// unmarshalOpen fills a struct's fields, and its Extra with the fields it has none for.
func unmarshalOpen(data []byte, known any, extra *map[string]json.RawMessage) error {
	if err := json.Unmarshal(data, known); err != nil {
		return err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return err
	}
	*extra = nil
	for name, value := range fields {
		if !typedField(reflect.TypeOf(known).Elem(), name) {
			if *extra == nil {
				*extra = map[string]json.RawMessage{}
			}
			(*extra)[name] = value
		}
	}
	return nil
}

var jsonNames sync.Map // reflect.Type -> map[string]bool

// typedField says whether the struct has a field of that JSON name.
func typedField(t reflect.Type, name string) bool {
	names, ok := jsonNames.Load(t)
	if !ok {
		set := map[string]bool{}
		for i := range t.NumField() {
			tag, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			if tag != "" && tag != "-" {
				set[tag] = true
			}
		}
		names, _ = jsonNames.LoadOrStore(t, set)
	}
	return names.(map[string]bool)[name]
}

// Session is a session as the server gives it: with its events when read one by one, without
// in listings.
type Session struct {
	ID             string  `json:"id"`
	AppName        string  `json:"appName"`
	UserID         string  `json:"userId"`
	State          State   `json:"state"`
	Events         []Event `json:"events"`
	LastUpdateTime float64 `json:"lastUpdateTime"`
	CreateTime     float64 `json:"createTime"`
	// Version is the session's version: If-Match takes it, to write only if nothing else did.
	Version     int64             `json:"version"`
	Kind        string            `json:"kind"` // "root", "fork" or "child"
	Parent      *Parent           `json:"parent"`
	Status      string            `json:"status"` // "open" or "closed"
	Outcome     *string           `json:"outcome"`
	Usage       Usage             `json:"usage"`
	DisplayName *string           `json:"displayName"`
	Labels      map[string]string `json:"labels"`
	ExpireTime  *float64          `json:"expireTime"`
}

// Parent is where a fork or a child session came from.
type Parent struct {
	SessionID      string  `json:"sessionId"`
	Seq            int64   `json:"seq"`
	FunctionCallID *string `json:"functionCallId"`
}

// Usage is the token counts of a session's events.
type Usage struct {
	PromptTokenCount     int64 `json:"promptTokenCount"`
	CandidatesTokenCount int64 `json:"candidatesTokenCount"`
	TotalTokenCount      int64 `json:"totalTokenCount"`
}

// SessionCreate is a new session: the server's id unless SessionID; TTL (seconds) or
// ExpireTime (epoch seconds) for one that expires; Events stored with it.
type SessionCreate struct {
	SessionID   string            `json:"sessionId,omitempty"`
	State       State             `json:"state,omitempty"`
	Events      []Event           `json:"events,omitempty"`
	DisplayName string            `json:"displayName,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	TTL         *float64          `json:"ttl,omitempty"`
	ExpireTime  *float64          `json:"expireTime,omitempty"`
}

// SessionUpdate changes what it sets, in one write. StateDelta is recorded as an event by
// `user`; Labels replace them all (an empty map clears them); DisplayName, TTL and ExpireTime
// take Some(value), or Null() to clear them.
type SessionUpdate struct {
	StateDelta  State             `json:"stateDelta,omitempty"`
	DisplayName Opt[string]       `json:"displayName,omitzero"`
	Labels      map[string]string `json:"labels,omitzero"`
	TTL         Opt[float64]      `json:"ttl,omitzero"`
	ExpireTime  Opt[float64]      `json:"expireTime,omitzero"`
}

// Int64 is v for an optional number of a call's parameters, which are pointers so that 0 can be
// sent: nil is not sent, Int64(0) sends 0.
func Int64(v int64) *int64 { return &v }

// Float64 is Int64 for a float (a timestamp, seconds).
func Float64(v float64) *float64 { return &v }

// Opt is an optional field that can also be null: absent (the zero Opt), Some(v) or Null().
type Opt[T any] struct {
	set   bool
	value *T
}

// Some is a field set to v.
func Some[T any](v T) Opt[T] { return Opt[T]{set: true, value: &v} }

// Null is a field set to null.
func Null[T any]() Opt[T] { return Opt[T]{set: true} }

// IsZero is true for an absent field (json's omitzero leaves it out).
func (o Opt[T]) IsZero() bool { return !o.set }

func (o Opt[T]) MarshalJSON() ([]byte, error) { return json.Marshal(o.value) }

// SessionFork names where a fork branches: at AtSeq (Int64(0): before the first event), or
// before BeforeInvocationID's first event, or (neither) after the last event.
type SessionFork struct {
	SessionID          string `json:"sessionId,omitempty"`
	AtSeq              *int64 `json:"atSeq,omitempty"`
	BeforeInvocationID string `json:"beforeInvocationId,omitempty"`
}

// ChildCreate is a child session for a sub-agent; with FunctionCallID, closing it answers that
// call of the parent. Inherit: "none" (default), "all" or "context".
type ChildCreate struct {
	SessionID      string `json:"sessionId,omitempty"`
	State          State  `json:"state,omitempty"`
	FunctionCallID string `json:"functionCallId,omitempty"`
	Inherit        string `json:"inherit,omitempty"`
}

// SessionCompact is a compaction: Strategy "summary" (with Summary, your text), "truncate"
// or "observationMask", over the live events older than the newest KeepLast (nil: 0).
type SessionCompact struct {
	Strategy           string `json:"strategy"`
	KeepLast           *int64 `json:"keepLast,omitempty"`
	Summary            string `json:"summary,omitempty"`
	ToolOutputMaxChars *int64 `json:"toolOutputMaxChars,omitempty"`
}

// SessionClose closes a session with Outcome ("completed", "failed" or "canceled"); a child
// made for a function call answers it with Result (nil: none).
type SessionClose struct {
	Outcome string `json:"outcome"`
	Result  any    `json:"result,omitempty"`
}

// SessionRewind undoes the events of BeforeInvocationID and those after it.
type SessionRewind struct {
	BeforeInvocationID string `json:"beforeInvocationId"`
}

// SessionTrim keeps the newest KeepLast events (0: none).
type SessionTrim struct {
	KeepLast int64 `json:"keepLast"`
}

// SessionHeal answers the function calls unanswered past TimeoutSeconds (nil: the server's
// default; 0: every unanswered one).
type SessionHeal struct {
	TimeoutSeconds *float64 `json:"timeoutSeconds,omitempty"`
}

// PendingPromote appends the queue even while a function call is unanswered, if Force.
type PendingPromote struct {
	Force bool `json:"force,omitempty"`
}

// SessionPage is a page of sessions; NextPageToken is empty on the last.
type SessionPage struct {
	Sessions      []Session `json:"sessions"`
	NextPageToken *string   `json:"nextPageToken"`
}

// EventPage is a page of events; NextPageToken is empty on the last.
type EventPage struct {
	Events        []Event `json:"events"`
	NextPageToken *string `json:"nextPageToken"`
}

// EventCount is how many events a session holds, and its first and last seqs.
type EventCount struct {
	Count    int64  `json:"count"`
	FirstSeq *int64 `json:"firstSeq"`
	LastSeq  *int64 `json:"lastSeq"`
}

// EventsRemoved is what a removal took out, and the version it made.
type EventsRemoved struct {
	RemovedEventIDs []string `json:"removedEventIds"`
	Version         int64    `json:"version"`
}

// Trimmed is what a trim or a reset did.
type Trimmed struct {
	RemovedEvents int64 `json:"removedEvents"`
	KeptEvents    int64 `json:"keptEvents"`
	Version       int64 `json:"version"`
}

// Healed is how many orphaned function calls a heal answered.
type Healed struct {
	Healed  int64 `json:"healed"`
	Version int64 `json:"version"`
}

// ContextView is what a model should see next.
type ContextView struct {
	Events             []Event `json:"events"`
	EstimatedTokens    int64   `json:"estimatedTokens"`
	TruncatedBeforeSeq *int64  `json:"truncatedBeforeSeq"`
	OverBudget         bool    `json:"overBudget"`
}

// ToolCall is a function call of the session and its status: "answered", "pending" or
// "orphaned" (unanswered past the timeout).
type ToolCall struct {
	ID          string   `json:"id"`
	Name        *string  `json:"name"`
	EventID     string   `json:"eventId"`
	Seq         int64    `json:"seq"`
	Timestamp   float64  `json:"timestamp"`
	Status      string   `json:"status"`
	Deadline    *float64 `json:"deadline"`
	LongRunning bool     `json:"longRunning"`
}

// SearchHit is one event a search found.
type SearchHit struct {
	UserID    string  `json:"userId"`
	SessionID string  `json:"sessionId"`
	Seq       int64   `json:"seq"`
	EventID   string  `json:"eventId"`
	Author    *string `json:"author"`
	Timestamp float64 `json:"timestamp"`
	Rank      float64 `json:"rank"`
	Snippet   string  `json:"snippet"`
}

// SearchPage is a page of hits, best first.
type SearchPage struct {
	Hits          []SearchHit `json:"hits"`
	NextPageToken *string     `json:"nextPageToken"`
}

// AppSummary is an app that has sessions.
type AppSummary struct {
	AppName        string  `json:"appName"`
	SessionCount   int64   `json:"sessionCount"`
	LastUpdateTime float64 `json:"lastUpdateTime"`
}

// AppPage is a page of apps.
type AppPage struct {
	Apps          []AppSummary `json:"apps"`
	NextPageToken *string      `json:"nextPageToken"`
}

// UserSummary is a user of an app that has sessions.
type UserSummary struct {
	UserID         string  `json:"userId"`
	SessionCount   int64   `json:"sessionCount"`
	LastUpdateTime float64 `json:"lastUpdateTime"`
}

// UserPage is a page of users.
type UserPage struct {
	Users         []UserSummary `json:"users"`
	NextPageToken *string       `json:"nextPageToken"`
}

// AppUsage is the token counts of an app's events, by user and in all.
type AppUsage struct {
	Users []UserUsage `json:"users"`
	Total TotalUsage  `json:"total"`
}

// UserUsage is one user's token counts.
type UserUsage struct {
	UserID               string `json:"userId"`
	PromptTokenCount     int64  `json:"promptTokenCount"`
	CandidatesTokenCount int64  `json:"candidatesTokenCount"`
	TotalTokenCount      int64  `json:"totalTokenCount"`
	Events               int64  `json:"events"`
}

// TotalUsage is an app's token counts in all.
type TotalUsage struct {
	PromptTokenCount     int64 `json:"promptTokenCount"`
	CandidatesTokenCount int64 `json:"candidatesTokenCount"`
	TotalTokenCount      int64 `json:"totalTokenCount"`
	Events               int64 `json:"events"`
}

// KeyScope is what the API key sent may do.
type KeyScope struct {
	AuthEnabled    bool    `json:"authEnabled"`
	KeyID          *string `json:"keyId"`
	AppName        *string `json:"appName"`
	UserID         *string `json:"userId"`
	ReadOnly       bool    `json:"readOnly"`
	WritesAppState bool    `json:"writesAppState"`
}

// Health is /healthz's answer; Readiness /readyz's.
type Health struct {
	Status string `json:"status"`
}

// Readiness says the database answers, at the schema revision the server expects, and how
// memories are recalled now: "meaning+words", or "words" alone (EmbeddingsStatus says why).
type Readiness struct {
	Status         string `json:"status"`
	SchemaRevision string `json:"schemaRevision"`
	Recall         string `json:"recall"`
}

// AuditRecord is one record of the audit log: which key did what, when, and how it went.
// KeyID is the acting API key's id, never its secret (nil with keys off, and for the command
// line and the sweeper); User the user as a pseudonym, a keyed hash of the app and the user id
// (never the id); Detail ids (a session as a keyed hash too) and counts, never content;
// Outcome "ok", or how it failed.
type AuditRecord struct {
	Seq     int64          `json:"seq"`
	Time    float64        `json:"time"`
	Action  string         `json:"action"` // "session.delete", "session.import", "key.create", ...
	KeyID   *string        `json:"keyId"`
	AppName *string        `json:"appName"`
	User    *string        `json:"user"`
	Detail  map[string]any `json:"detail"`
	Outcome string         `json:"outcome"`
}

// AuditPage is a page of audit records, newest first.
type AuditPage struct {
	Records       []AuditRecord `json:"records"`
	NextPageToken *string       `json:"nextPageToken"`
}

// Erasure is an erase of a user of an app (EraseUser), as GetErasure reads it. Status is
// "running" (the user's writes are refused with ErrUserErasing while what is left is deleted) or
// "done" (nothing of the user is left); Removed counts the rows removed so far by kind
// ("sessions", "events", "memories", "artifacts", "apiKeys", ...); DeletedKeyIDs are the ids of
// the API keys made for the user, deleted. Times are epoch seconds; FinishTime is nil while it
// runs. ID is the erase's id, as the audit log names it; UserID the user as asked for (the
// server keeps no copy).
type Erasure struct {
	ID            string           `json:"id"`
	AppName       string           `json:"appName"`
	UserID        string           `json:"userId"`
	Status        string           `json:"status"` // "running" or "done"
	Removed       map[string]int64 `json:"removed"`
	DeletedKeyIDs []string         `json:"deletedKeyIds"`
	CreateTime    float64          `json:"createTime"`
	UpdateTime    float64          `json:"updateTime"`
	FinishTime    *float64         `json:"finishTime"`
}

// UserImport is what ImportUser did, in one transaction: what it Created, what was there
// already the same (Unchanged: the same export again creates nothing), and how many keys of
// the user's state it wrote.
type UserImport struct {
	Created       UserImportCounts `json:"created"`
	Unchanged     UserImportCounts `json:"unchanged"`
	UserStateKeys int64            `json:"userStateKeys"`
}

// UserImportCounts counts what an import of a user's export found, by kind: Events of the
// Sessions counted, ArtifactVersions of the user's `user:` artifacts.
type UserImportCounts struct {
	Sessions         int64 `json:"sessions"`
	Events           int64 `json:"events"`
	Memories         int64 `json:"memories"`
	ArtifactVersions int64 `json:"artifactVersions"`
}

// AppErasure is an erase of a whole app (EraseApp), as GetAppErasure reads it: an Erasure
// without a user. Status "running" refuses writes that make something of the app with
// ErrAppErasing; Removed counts every user's rows and the app's ("appStates"); DeletedKeyIDs are
// the ids of every API key made for the app or one of its users, deleted.
type AppErasure struct {
	ID            string           `json:"id"`
	AppName       string           `json:"appName"`
	Status        string           `json:"status"` // "running" or "done"
	Removed       map[string]int64 `json:"removed"`
	DeletedKeyIDs []string         `json:"deletedKeyIds"`
	CreateTime    float64          `json:"createTime"`
	UpdateTime    float64          `json:"updateTime"`
	FinishTime    *float64         `json:"finishTime"`
}

// ArtifactVersion is one saved version of an artifact: ADK's ArtifactVersion (Version,
// CanonicalURI, CustomMetadata, CreateTime, MimeType) and what its content is. Kind says how it
// was saved: "bytes" (inline data, or an upload), "text" (a Part's text, kept as UTF-8), or
// "reference" (a URI, FileURI, and no bytes here: Size 0, SHA256 nil).
type ArtifactVersion struct {
	Name    string `json:"name"`
	Version int64  `json:"version"` // 0 for a name's first save
	// CanonicalURI is ADK's `artifact://apps/…/versions/{n}` of this version: a reference to
	// it reads as its content.
	CanonicalURI   string         `json:"canonicalUri"`
	CustomMetadata map[string]any `json:"customMetadata"`
	CreateTime     float64        `json:"createTime"`
	// MimeType is the Content-Type its content is served with; nil for a reference saved
	// without one.
	MimeType *string `json:"mimeType"`
	Kind     string  `json:"kind"`
	Size     int64   `json:"size"`
	// SHA256 is its content's, in hex: its download's ETag.
	SHA256      *string `json:"sha256"`
	DisplayName *string `json:"displayName"`
	FileURI     *string `json:"fileUri"`
}

// ArtifactPage is a page of artifacts, the newest version of each name, by name; NextPageToken
// is empty on the last.
type ArtifactPage struct {
	Artifacts     []ArtifactVersion `json:"artifacts"`
	NextPageToken *string           `json:"nextPageToken"`
}

// ArtifactVersionPage is a page of an artifact's versions, oldest first.
type ArtifactVersionPage struct {
	Versions      []ArtifactVersion `json:"versions"`
	NextPageToken *string           `json:"nextPageToken"`
}

// ArtifactSave is ADK's SaveArtifactRequest: the next version of Filename (one that starts
// with `user:` belongs to the user) from Artifact, with CustomMetadata (nil: none).
type ArtifactSave struct {
	Filename       string         `json:"filename"`
	Artifact       ArtifactPart   `json:"artifact"`
	CustomMetadata map[string]any `json:"customMetadata,omitempty"`
}

// ArtifactPart is an artifact as ADK hands it over, a genai Part with exactly one of
// InlineData (bytes), Text, or FileData (a reference to content elsewhere, by URI).
type ArtifactPart struct {
	InlineData *InlineArtifact    `json:"inlineData,omitempty"`
	Text       string             `json:"text,omitempty"`
	FileData   *ArtifactReference `json:"fileData,omitempty"`
}

// InlineArtifact is bytes sent in the request (base64 in its JSON), with their MimeType
// ("image/png").
type InlineArtifact struct {
	Data        []byte `json:"data"`
	MimeType    string `json:"mimeType"`
	DisplayName string `json:"displayName,omitempty"`
}

// ArtifactReference is content stored elsewhere, by FileURI; an `artifact://` URI (another
// version's CanonicalURI) names a version of this app and user, which downloads follow.
type ArtifactReference struct {
	FileURI     string `json:"fileUri"`
	MimeType    string `json:"mimeType,omitempty"`
	DisplayName string `json:"displayName,omitempty"`
}

// Memory is a memory: a text of its own (Kind "text"), or an event of a session added to
// memory (Kind "event"), whose Text, Content, Author and Timestamp are the event's.
type Memory struct {
	ID     string  `json:"id"`
	Scope  string  `json:"scope"`  // "user", or "app" (every user's agents recall it)
	UserID *string `json:"userId"` // nil for the app's
	Kind   string  `json:"kind"`
	// Revision is 1 when made, +1 per change: IfMatch takes it, to change it only if nothing
	// else did.
	Revision int64 `json:"revision"`
	// Text is what is recalled: its text parts, joined.
	Text       *string        `json:"text"`
	Content    Content        `json:"content"`
	Author     *string        `json:"author"`
	Metadata   map[string]any `json:"metadata"`
	Topics     []string       `json:"topics"`
	ExpireTime *float64       `json:"expireTime"`
	Source     *MemorySource  `json:"source"`
	// Timestamp is when it was said: its event's timestamp, else when the memory was made.
	Timestamp  float64 `json:"timestamp"`
	CreateTime float64 `json:"createTime"`
	UpdateTime float64 `json:"updateTime"`
	// Embedded says the server's model has embedded its current revision: until then it is
	// recalled by words (and by a client's vector).
	Embedded bool `json:"embedded"`
}

// MemorySource is where a memory was learnt: a session, and the events of it.
type MemorySource struct {
	SessionID string   `json:"sessionId"`
	EventIDs  []string `json:"eventIds,omitempty"`
}

// Embedding is a vector of the client's, by a Model of its own: recall by meaning compares it
// only with vectors of the same Model.
type Embedding struct {
	Model  string    `json:"model"`
	Vector []float64 `json:"vector"`
}

// MemoryCreate is a new memory: Text, or ADK's Content (whose text parts are what is
// recalled); the server's id unless ID; Author, who said it; TTL (seconds) or ExpireTime
// (epoch seconds) for one that is forgotten; Source, where it was learnt; Embedding, its vector
// by a model of the client's, besides the server's.
type MemoryCreate struct {
	ID         string         `json:"id,omitempty"`
	Text       string         `json:"text,omitempty"`
	Content    *Content       `json:"content,omitempty"`
	Author     string         `json:"author,omitempty"`
	Metadata   map[string]any `json:"metadata,omitempty"`
	Topics     []string       `json:"topics,omitempty"`
	Source     *MemorySource  `json:"source,omitempty"`
	Embedding  *Embedding     `json:"embedding,omitempty"`
	TTL        *float64       `json:"ttl,omitempty"`
	ExpireTime *float64       `json:"expireTime,omitempty"`
}

// MemoryUpdate changes what it sets, the rest kept, in one new revision: Text or Content (a
// new one is embedded again); Metadata and Topics replace them whole (an empty, non-nil one
// clears them; nil is not sent); Author, TTL and ExpireTime take Some(value), or Null() to
// clear them; Embedding, its new vector of the client's.
type MemoryUpdate struct {
	Text       string         `json:"text,omitempty"`
	Content    *Content       `json:"content,omitempty"`
	Author     Opt[string]    `json:"author,omitzero"`
	Metadata   map[string]any `json:"metadata,omitzero"`
	Topics     []string       `json:"topics,omitzero"`
	Embedding  *Embedding     `json:"embedding,omitempty"`
	TTL        Opt[float64]   `json:"ttl,omitzero"`
	ExpireTime Opt[float64]   `json:"expireTime,omitzero"`
}

// MemoryRollback names the revision to restore.
type MemoryRollback struct {
	Revision int64 `json:"revision"`
}

// MemoryPage is a page of memories, the most recently changed first; NextPageToken is empty
// on the last.
type MemoryPage struct {
	Memories      []Memory `json:"memories"`
	NextPageToken *string  `json:"nextPageToken"`
}

// MemoryRevision is one revision of a memory as it was then.
type MemoryRevision struct {
	Revision   int64          `json:"revision"`
	Text       *string        `json:"text"`
	Content    *Content       `json:"content"`
	Author     *string        `json:"author"`
	Metadata   map[string]any `json:"metadata"`
	Topics     []string       `json:"topics"`
	ExpireTime *float64       `json:"expireTime"`
	CreateTime float64        `json:"createTime"` // when the revision was made
}

// MemoryRevisionPage is a page of a memory's revisions, newest first.
type MemoryRevisionPage struct {
	Revisions     []MemoryRevision `json:"revisions"`
	NextPageToken *string          `json:"nextPageToken"`
}

// RecallQuery is a recall: Query, a question or topic in natural language (embedded by the
// server for recall by meaning, its words matched for recall by words), or Embedding, its
// vector by a model of the client's, or both. Mode is "hybrid" (the server's default: by
// meaning and by words, fused), "meaning" or "words". Limit is the most memories to answer
// (nil: 10); MinScore leaves out those that score below it; MinSimilarity, those found by
// meaning below that cosine similarity (nil: 0); Topics, those without one of them;
// AfterTimestamp and BeforeTimestamp, those changed outside that time. IncludeApp
// (Bool(false)) leaves out the app's memories from a user's recall. Nil or "": not sent.
type RecallQuery struct {
	Query           string     `json:"query,omitempty"`
	Embedding       *Embedding `json:"embedding,omitempty"`
	Mode            string     `json:"mode,omitempty"`
	Limit           *int64     `json:"limit,omitempty"`
	MinScore        *float64   `json:"minScore,omitempty"`
	MinSimilarity   *float64   `json:"minSimilarity,omitempty"`
	Topics          []string   `json:"topics,omitempty"`
	AfterTimestamp  *float64   `json:"afterTimestamp,omitempty"`
	BeforeTimestamp *float64   `json:"beforeTimestamp,omitempty"`
	IncludeApp      *bool      `json:"includeApp,omitempty"`
}

// Bool is Int64 for an optional bool (RecallQuery.IncludeApp, true when nil: Bool(false)
// sends false).
func Bool(v bool) *bool { return &v }

// RecallResult is what a recall found, best first; RecalledBy says how ("meaning+words",
// "meaning" or "words"), and Note why recall by meaning was left out, when it was.
type RecallResult struct {
	Memories   []RecalledMemory `json:"memories"`
	RecalledBy string           `json:"recalledBy"`
	Note       *string          `json:"note"`
}

// RecalledMemory is a memory recall found, and how well it answers: Score, its reciprocal rank
// fusion over the best possible (1: first in every way recall looked); Similarity, the cosine
// similarity of its vector to the query's (nil: not found by meaning); WordScore, how well its
// words match (nil: no word matched).
type RecalledMemory struct {
	Memory     Memory   `json:"memory"`
	Score      float64  `json:"score"`
	Similarity *float64 `json:"similarity"`
	WordScore  *float64 `json:"wordScore"`
}

// SessionRemember names the events of the session to add to memory (nil: those the server's
// SESSIONARY_MEMORY_FROM takes, by default what the user said).
type SessionRemember struct {
	EventIDs []string `json:"eventIds,omitempty"`
}

// Remembered is how many events a Remember added to memory (not those added before).
type Remembered struct {
	Remembered int64 `json:"remembered"`
}

// EmbeddingsStatus is how memories are recalled now: Recall, "meaning+words" or "words" (Note
// says why); the Provider ("wordllama", "openai" or "none") and Model the server embeds with;
// Pgvector's version (nil: none); Pending, the memories not embedded yet; Rate, those embedded
// per second lately by the answering process's worker.
type EmbeddingsStatus struct {
	Recall   string   `json:"recall"`
	Note     *string  `json:"note"`
	Pgvector *string  `json:"pgvector"`
	Provider string   `json:"provider"`
	Model    *string  `json:"model"`
	Pending  int64    `json:"pending"`
	Rate     *float64 `json:"rate"`
}
