package sessionary

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"
)

// Memories against a live server: every method, a user's and the app's; revisions under
// If-Match; recall by words and, once the server's model has embedded them, by meaning; a
// session's events added to memory.

func texts(memories []Memory) []string {
	var got []string
	for _, memory := range memories {
		got = append(got, *memory.Text)
	}
	return got
}

func recalled(result *RecallResult) []string {
	var got []string
	for _, hit := range result.Memories {
		got = append(got, *hit.Memory.Text)
	}
	return got
}

// embedded waits until the server's model has embedded every memory (pending 0).
func embedded(t *testing.T, c *Client) *EmbeddingsStatus {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		status := must[*EmbeddingsStatus](t)(c.EmbeddingsStatus(context.Background()))
		if status.Recall != "meaning+words" {
			t.Fatalf("the server recalls by %s alone: %v", status.Recall, *status.Note)
		}
		if status.Pending == 0 {
			return status
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d memories still wait to be embedded", status.Pending)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestAUsersMemoriesAreRevisedRecalledAndForgotten(t *testing.T) {
	ctx := context.Background()
	c, app := client(t, Options{}), unique("go-memories")

	food := must[*Memory](t)(c.CreateMemory(ctx, app, "ada", MemoryCreate{ID: "diet", Text: "I'm vegetarian.",
		Author: "user", Topics: []string{"food"}, Metadata: map[string]any{"confidence": 0.9}}))
	if food.ID != "diet" || food.Revision != 1 || food.Scope != "user" || *food.UserID != "ada" || food.Kind != "text" ||
		*food.Author != "user" || food.Content.Text() != "I'm vegetarian." || food.Metadata["confidence"] != 0.9 ||
		food.Source != nil || food.ExpireTime != nil {
		t.Fatalf("created %+v", food)
	}
	must[*Memory](t)(c.CreateMemory(ctx, app, "ada", MemoryCreate{Content: Text("user", "My sister lives in Bergen."),
		Topics: []string{"family"}, Source: &MemorySource{SessionID: "s1", EventIDs: []string{"e1"}}}))
	must[*Memory](t)(c.CreateMemory(ctx, app, "ada", MemoryCreate{Text: "I drive a red car.", TTL: Float64(3600)}))
	if _, err := c.CreateMemory(ctx, app, "ada", MemoryCreate{ID: "diet", Text: "again"}); !errors.Is(err, ErrMemoryAlreadyExists) ||
		!errors.Is(err, ErrConflict) {
		t.Fatalf("a taken id: %v", err)
	}
	got := must[*Memory](t)(c.GetMemory(ctx, app, "ada", "diet"))
	if got.Revision != 1 || *got.Text != "I'm vegetarian." {
		t.Fatalf("read %+v", got)
	}

	// A change under If-Match is the next revision; one made with a stale revision changes
	// nothing.
	revised := must[*Memory](t)(c.UpdateMemory(ctx, app, "ada", "diet",
		MemoryUpdate{Text: "I'm vegan.", Topics: []string{"food", "diet"}}, IfMatch(got.Revision)))
	if revised.Revision != 2 || *revised.Text != "I'm vegan." || !slices.Equal(revised.Topics, []string{"food", "diet"}) ||
		revised.Metadata["confidence"] != 0.9 {
		t.Fatalf("revised %+v", revised)
	}
	_, err := c.UpdateMemory(ctx, app, "ada", "diet", MemoryUpdate{Text: "I eat fish."}, IfMatch(got.Revision))
	var stale *APIError
	if !errors.Is(err, ErrStaleMemory) || !errors.As(err, &stale) || stale.Status != http.StatusPreconditionFailed ||
		stale.Problem.CurrentRevision == nil || *stale.Problem.CurrentRevision != 2 {
		t.Fatalf("a stale update: %v", err)
	}
	if now := must[*Memory](t)(c.GetMemory(ctx, app, "ada", "diet")); now.Revision != 2 || *now.Text != "I'm vegan." {
		t.Fatalf("after a stale update %+v", now)
	}

	// Revisions, newest first; a roll back is the next revision, a copy of the one named.
	revisions := collect(t, c.MemoryRevisions(ctx, app, "ada", "diet"))
	if len(revisions) != 2 || revisions[0].Revision != 2 || revisions[1].Revision != 1 || *revisions[1].Text != "I'm vegetarian." {
		t.Fatalf("revisions %+v", revisions)
	}
	first := must[*MemoryRevisionPage](t)(c.ListMemoryRevisions(ctx, app, "ada", "diet", Page{PageSize: Int64(1)}))
	if len(first.Revisions) != 1 || first.NextPageToken == nil {
		t.Fatalf("a page of revisions %+v", first)
	}
	restored := must[*Memory](t)(c.RollBackMemory(ctx, app, "ada", "diet", MemoryRollback{Revision: 1}, IfMatch(2)))
	if restored.Revision != 3 || *restored.Text != "I'm vegetarian." || !slices.Equal(restored.Topics, []string{"food"}) {
		t.Fatalf("rolled back %+v", restored)
	}
	if _, err := c.RollBackMemory(ctx, app, "ada", "diet", MemoryRollback{Revision: 1}, IfMatch(2)); !errors.Is(err, ErrStaleMemory) {
		t.Fatalf("a stale roll back: %v", err)
	}
	if _, err := c.RollBackMemory(ctx, app, "ada", "diet", MemoryRollback{Revision: 99}); !errors.Is(err, ErrMemoryNotFound) {
		t.Fatalf("a roll back to no revision: %v", err)
	}

	// Listings, with a filter, and page by page.
	if foods := must[*MemoryPage](t)(c.ListMemories(ctx, app, "ada", MemoryFilter{Topic: "food"})); !slices.Equal(texts(foods.Memories),
		[]string{"I'm vegetarian."}) || foods.NextPageToken != nil {
		t.Fatalf("memories about food %v", texts(foods.Memories))
	}
	all := collect(t, c.Memories(ctx, app, "ada", MemoryFilter{Page: Page{PageSize: Int64(2)}}))
	if want := []string{"I'm vegetarian.", "I drive a red car.", "My sister lives in Bergen."}; !slices.Equal(texts(all), want) {
		t.Fatalf("every memory %v, not %v", texts(all), want)
	}
	learnt := must[*MemoryPage](t)(c.ListMemories(ctx, app, "ada", MemoryFilter{SessionID: "s1", Kind: "text"}))
	if len(learnt.Memories) != 1 || learnt.Memories[0].Source.SessionID != "s1" || !slices.Equal(learnt.Memories[0].Source.EventIDs, []string{"e1"}) {
		t.Fatalf("learnt in s1 %+v", learnt.Memories)
	}

	// Recall by words, at once, and filtered by topic.
	byWords := must[*RecallResult](t)(c.RecallMemories(ctx, app, "ada", RecallQuery{Query: "Who lives in Bergen?", Mode: "words"}))
	if !slices.Equal(recalled(byWords), []string{"My sister lives in Bergen."}) || byWords.RecalledBy != "words" ||
		byWords.Memories[0].WordScore == nil || byWords.Memories[0].Similarity != nil || byWords.Memories[0].Score != 1 {
		t.Fatalf("recalled by words %+v", byWords)
	}
	elsewhere := must[*RecallResult](t)(c.RecallMemories(ctx, app, "ada", RecallQuery{Query: "Bergen", Topics: []string{"food"}}))
	if len(elsewhere.Memories) != 0 {
		t.Fatalf("Bergen about food %v", recalled(elsewhere))
	}

	// By meaning, once the server's model has embedded them: no word is shared.
	status := embedded(t, c)
	if status.Model == nil || status.Provider == "none" {
		t.Fatalf("status %+v", status)
	}
	if now := must[*Memory](t)(c.GetMemory(ctx, app, "ada", "diet")); !now.Embedded {
		t.Fatalf("not embedded with nothing pending: %+v", now)
	}
	byMeaning := must[*RecallResult](t)(c.RecallMemories(ctx, app, "ada", RecallQuery{Query: "what food do I like?", Limit: Int64(1)}))
	if !slices.Equal(recalled(byMeaning), []string{"I'm vegetarian."}) || byMeaning.RecalledBy != "meaning+words" ||
		byMeaning.Memories[0].Similarity == nil || byMeaning.Memories[0].WordScore != nil || byMeaning.Note != nil {
		t.Fatalf("recalled by meaning %+v", byMeaning)
	}

	// Forgotten, under If-Match; then it is not there.
	if err := c.DeleteMemory(ctx, app, "ada", "diet", IfMatch(2)); !errors.Is(err, ErrStaleMemory) {
		t.Fatalf("a stale delete: %v", err)
	}
	if err := c.DeleteMemory(ctx, app, "ada", "diet", IfMatch(3)); err != nil {
		t.Fatal(err)
	}
	for _, gone := range []error{
		second(c.GetMemory(ctx, app, "ada", "diet")),
		second(c.ListMemoryRevisions(ctx, app, "ada", "diet", Page{})),
		c.DeleteMemory(ctx, app, "ada", "diet"),
		second(c.UpdateMemory(ctx, app, "ada", "diet", MemoryUpdate{Text: "x"}, IfExists())),
	} {
		if !errors.Is(gone, ErrMemoryNotFound) || !errors.Is(gone, ErrNotFound) {
			t.Fatalf("a deleted memory: %v", gone)
		}
	}
	after := must[*RecallResult](t)(c.RecallMemories(ctx, app, "ada", RecallQuery{Query: "what food do I like?"}))
	if slices.Contains(recalled(after), "I'm vegetarian.") {
		t.Fatalf("a deleted memory recalled: %v", recalled(after))
	}

	// What the server would refuse is not sent.
	var refusal *APIError
	if _, err := c.GetMemory(ctx, app, "ada", ".."); !errors.Is(err, ErrValidation) || !errors.As(err, &refusal) || refusal.RequestID != "" {
		t.Fatalf("an id `..`: %v", err)
	}
	if _, err := c.CreateMemory(ctx, app, "", MemoryCreate{Text: "whose?"}); !errors.Is(err, ErrValidation) {
		t.Fatalf("no user: %v", err)
	}
}

func TestTheAppsMemoriesAreEveryUsers(t *testing.T) {
	ctx := context.Background()
	c, app := client(t, Options{}), unique("go-memories")
	hours := must[*Memory](t)(c.CreateAppMemory(ctx, app, MemoryCreate{ID: "hours", Text: "The shop opens at nine.",
		Topics: []string{"shop"}}))
	if hours.Scope != "app" || hours.UserID != nil || hours.Revision != 1 {
		t.Fatalf("created %+v", hours)
	}
	must[*Memory](t)(c.CreateMemory(ctx, app, "ada", MemoryCreate{Text: "Ada opens the shop on Mondays."}))
	if _, err := c.GetMemory(ctx, app, "ada", "hours"); !errors.Is(err, ErrMemoryNotFound) {
		t.Fatalf("the app's memory read as a user's: %v", err)
	}

	revised := must[*Memory](t)(c.UpdateAppMemory(ctx, app, "hours", MemoryUpdate{Text: "The shop opens at ten."}, IfMatch(1)))
	if _, err := c.UpdateAppMemory(ctx, app, "hours", MemoryUpdate{Text: "At eleven."}, IfMatch(1)); !errors.Is(err, ErrStaleMemory) {
		t.Fatalf("a stale update: %v", err)
	}
	if got := must[*Memory](t)(c.GetAppMemory(ctx, app, "hours")); got.Revision != revised.Revision || *got.Text != "The shop opens at ten." {
		t.Fatalf("read %+v", got)
	}
	if revisions := collect(t, c.AppMemoryRevisions(ctx, app, "hours")); len(revisions) != 2 || *revisions[0].Text != "The shop opens at ten." {
		t.Fatalf("revisions %+v", revisions)
	}
	if page := must[*MemoryRevisionPage](t)(c.ListAppMemoryRevisions(ctx, app, "hours", Page{PageSize: Int64(1)})); page.NextPageToken == nil {
		t.Fatalf("a page of revisions %+v", page)
	}
	restored := must[*Memory](t)(c.RollBackAppMemory(ctx, app, "hours", MemoryRollback{Revision: 1}, IfMatch(2)))
	if restored.Revision != 3 || *restored.Text != "The shop opens at nine." {
		t.Fatalf("rolled back %+v", restored)
	}
	if listed := collect(t, c.AppMemories(ctx, app, MemoryFilter{Topic: "shop"})); !slices.Equal(texts(listed), []string{"The shop opens at nine."}) {
		t.Fatalf("the app's memories %v", texts(listed))
	}
	if page := must[*MemoryPage](t)(c.ListAppMemories(ctx, app, MemoryFilter{Topic: "weather"})); len(page.Memories) != 0 {
		t.Fatalf("about the weather %v", texts(page.Memories))
	}

	// A user's recall finds the app's memories too, unless asked not to; the app's, its own.
	words := RecallQuery{Query: "When does the shop open?", Mode: "words"}
	if got := recalled(must[*RecallResult](t)(c.RecallMemories(ctx, app, "ada", words))); len(got) != 2 {
		t.Fatalf("ada recalls %v", got)
	}
	if got := recalled(must[*RecallResult](t)(c.RecallMemories(ctx, app, "bob", words))); !slices.Equal(got, []string{"The shop opens at nine."}) {
		t.Fatalf("bob recalls %v", got)
	}
	words.IncludeApp = Bool(false)
	if got := recalled(must[*RecallResult](t)(c.RecallMemories(ctx, app, "ada", words))); !slices.Equal(got, []string{"Ada opens the shop on Mondays."}) {
		t.Fatalf("ada's own %v", got)
	}
	if got := recalled(must[*RecallResult](t)(c.RecallAppMemories(ctx, app, words))); !slices.Equal(got, []string{"The shop opens at nine."}) {
		t.Fatalf("the app recalls %v", got)
	}

	if err := c.DeleteAppMemory(ctx, app, "hours", IfMatch(3)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetAppMemory(ctx, app, "hours"); !errors.Is(err, ErrMemoryNotFound) {
		t.Fatalf("a deleted memory: %v", err)
	}
	if err := c.DeleteAppMemory(ctx, app, "hours"); !errors.Is(err, ErrMemoryNotFound) {
		t.Fatalf("deleted again: %v", err)
	}
}

func TestASessionsEventsAreRememberedOnceAndForgottenWithIt(t *testing.T) {
	ctx := context.Background()
	c, app := client(t, Options{}), unique("go-memories")
	question := said("user", "I am allergic to peanuts.")
	question.Timestamp = 1795000000.5
	session := must[*Session](t)(c.CreateSession(ctx, app, "ada", SessionCreate{SessionID: "s",
		Events: []Event{question, said("assistant", "Noted: no peanuts.")}}))
	events := must[*EventPage](t)(c.ListEvents(ctx, app, "ada", session.ID, EventFilter{})).Events

	// What the user said, by default; each event once.
	if added := must[*Remembered](t)(c.Remember(ctx, app, "ada", session.ID, SessionRemember{})); added.Remembered != 1 {
		t.Fatalf("remembered %d", added.Remembered)
	}
	if added := must[*Remembered](t)(c.Remember(ctx, app, "ada", session.ID, SessionRemember{})); added.Remembered != 0 {
		t.Fatalf("remembered again %d", added.Remembered)
	}
	// Named events, whoever said them.
	if added := must[*Remembered](t)(c.Remember(ctx, app, "ada", session.ID, SessionRemember{EventIDs: []string{events[1].ID}})); added.Remembered != 1 {
		t.Fatalf("remembered the answer: %d", added.Remembered)
	}
	learnt := collect(t, c.Memories(ctx, app, "ada", MemoryFilter{SessionID: session.ID, Kind: "event"}))
	if !slices.Equal(texts(learnt), []string{"Noted: no peanuts.", "I am allergic to peanuts."}) &&
		!slices.Equal(texts(learnt), []string{"I am allergic to peanuts.", "Noted: no peanuts."}) {
		t.Fatalf("learnt %v", texts(learnt))
	}
	for _, memory := range learnt {
		if memory.Kind != "event" || memory.Source.SessionID != session.ID || len(memory.Source.EventIDs) != 1 {
			t.Fatalf("a remembered event %+v", memory)
		}
		if *memory.Text == "I am allergic to peanuts." && (*memory.Author != "user" || memory.Timestamp != 1795000000.5 ||
			memory.Source.EventIDs[0] != events[0].ID) {
			t.Fatalf("the user's event remembered as %+v", memory)
		}
	}
	hits := must[*RecallResult](t)(c.RecallMemories(ctx, app, "ada", RecallQuery{Query: "peanuts", Mode: "words"}))
	if len(hits.Memories) != 2 {
		t.Fatalf("recalled %v", recalled(hits))
	}
	// Its text is the event's: an update changes its metadata, topics or expiry alone.
	tagged := must[*Memory](t)(c.UpdateMemory(ctx, app, "ada", learnt[0].ID, MemoryUpdate{Topics: []string{"health"}}, IfMatch(1)))
	if tagged.Revision != 2 || !slices.Equal(tagged.Topics, []string{"health"}) || tagged.Kind != "event" {
		t.Fatalf("tagged %+v", tagged)
	}
	if _, err := c.UpdateMemory(ctx, app, "ada", learnt[0].ID, MemoryUpdate{Text: "x"}); !errors.Is(err, ErrValidation) {
		t.Fatalf("an event's memory given a text: %v", err)
	}

	if _, err := c.Remember(ctx, app, "ada", session.ID, SessionRemember{EventIDs: []string{"no-such-event"}}); !errors.Is(err, ErrValidation) {
		t.Fatalf("an event the session lacks: %v", err)
	}
	if _, err := c.Remember(ctx, app, "ada", "no-such-session", SessionRemember{}); !errors.Is(err, ErrSessionNotFound) {
		t.Fatalf("a missing session: %v", err)
	}
	// Deleted with the session.
	if err := c.DeleteSession(ctx, app, "ada", session.ID); err != nil {
		t.Fatal(err)
	}
	if left := must[*MemoryPage](t)(c.ListMemories(ctx, app, "ada", MemoryFilter{SessionID: session.ID})); len(left.Memories) != 0 {
		t.Fatalf("left after the session was deleted: %v", texts(left.Memories))
	}
}

// A recall writes nothing, and adding a session's events to memory adds each once: both are
// sent again after a 503. A create, an update, a roll back or a delete of a memory is sent
// once: a resend could do it twice, or answer that it was done.
func TestRecallsAndRemembersAreResentAndMemoryWritesAreNot(t *testing.T) {
	ctx := context.Background()
	base, seen := answering(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		unavailable(w, "0")
	})
	c := client(t, Options{BaseURL: base, Retries: 2})
	sentTimes := func(call func() error) int {
		before := len(seen())
		if err := call(); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("not the server's 503: %v", err)
		}
		return len(seen()) - before
	}
	for name, call := range map[string]func() error{
		"RecallMemories":    func() error { return second(c.RecallMemories(ctx, "a", "u", RecallQuery{Query: "q"})) },
		"RecallAppMemories": func() error { return second(c.RecallAppMemories(ctx, "a", RecallQuery{Query: "q"})) },
		"Remember":          func() error { return second(c.Remember(ctx, "a", "u", "s", SessionRemember{})) },
		"GetMemory":         func() error { return second(c.GetMemory(ctx, "a", "u", "m")) },
	} {
		if n := sentTimes(call); n != 3 {
			t.Errorf("%s: sent %d times, not 3", name, n)
		}
	}
	for name, call := range map[string]func() error{
		"CreateMemory":      func() error { return second(c.CreateMemory(ctx, "a", "u", MemoryCreate{Text: "t"})) },
		"CreateAppMemory":   func() error { return second(c.CreateAppMemory(ctx, "a", MemoryCreate{Text: "t"})) },
		"UpdateMemory":      func() error { return second(c.UpdateMemory(ctx, "a", "u", "m", MemoryUpdate{Text: "t"}, IfMatch(1))) },
		"RollBackMemory":    func() error { return second(c.RollBackMemory(ctx, "a", "u", "m", MemoryRollback{Revision: 1})) },
		"DeleteMemory":      func() error { return c.DeleteMemory(ctx, "a", "u", "m") },
		"DeleteAppMemory":   func() error { return c.DeleteAppMemory(ctx, "a", "m") },
		"UpdateAppMemory":   func() error { return second(c.UpdateAppMemory(ctx, "a", "m", MemoryUpdate{Text: "t"})) },
		"RollBackAppMemory": func() error { return second(c.RollBackAppMemory(ctx, "a", "m", MemoryRollback{Revision: 1})) },
	} {
		if n := sentTimes(call); n != 1 {
			t.Errorf("%s: sent %d times, not once", name, n)
		}
	}
}
