package adk

import (
	"container/list"
	"sync"

	"google.golang.org/adk/v2/session"

	"sessionary.local/sessionary"
)

type sessionKey struct{ app, user, id string }

// kept is a session's events as a whole read gave them, with the session's creation time and
// the version they are the whole session at.
type kept struct {
	key        sessionKey
	createTime float64
	version    int64
	events     []*session.Event
}

// appended is what was appended to the kept session since, given its newest events as read
// found them; false unless appends alone came since to the same session (not one deleted and
// made again under its id), which is when its version moved on by exactly the events after
// the kept version: a removal, rewrite, trim, reset or close takes a version and appends
// nothing. (An event's seq is the version its append took, so as many events after the kept
// version as versions taken since are all of those versions.)
func (k *kept) appended(read *sessionary.Session) ([]sessionary.Event, bool) {
	if read.CreateTime != k.createTime {
		return nil, false
	}
	first := len(read.Events)
	for first > 0 && read.Events[first-1].Seq > k.version {
		first--
	}
	if int64(len(read.Events)-first) != read.Version-k.version {
		return nil, false
	}
	return read.Events[first:], true
}

// loaded is the events of the sessions the service read whole last, the most recently read
// first to stay, up to limit events in all. Its slices are never appended to in place: a
// session handed out may hold one.
type loaded struct {
	mu     sync.Mutex
	limit  int
	events int
	order  *list.List // of *kept, the most recently read first
	at     map[sessionKey]*list.Element
}

func newLoaded(limit int) *loaded {
	return &loaded{limit: limit, order: list.New(), at: map[sessionKey]*list.Element{}}
}

func (l *loaded) get(key sessionKey) (*kept, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	element, ok := l.at[key]
	if !ok {
		return nil, false
	}
	return element.Value.(*kept), true
}

// put keeps events, the whole session as read found it, as the most recently read.
func (l *loaded) put(key sessionKey, read *sessionary.Session, events []*session.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.remove(key)
	if l.limit == 0 || len(events) > l.limit {
		return
	}
	l.at[key] = l.order.PushFront(&kept{key: key, createTime: read.CreateTime, version: read.Version, events: events})
	l.events += len(events)
	for l.events > l.limit {
		l.remove(l.order.Back().Value.(*kept).key)
	}
}

func (l *loaded) drop(key sessionKey) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.remove(key)
}

func (l *loaded) remove(key sessionKey) {
	if element, ok := l.at[key]; ok {
		l.order.Remove(element)
		delete(l.at, key)
		l.events -= len(element.Value.(*kept).events)
	}
}
