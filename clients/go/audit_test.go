package sessionary

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// A user as the audit log names them: a keyed hash, 32 hex digits.
var pseudonym = regexp.MustCompile(`^[0-9a-f]{32}$`)

// The audit log against a live server, which runs with keys off: /audit is open, and a record
// names no key.

func TestASessionDeleteIsAuditedByPseudonymsAndFoundByItsUser(t *testing.T) {
	ctx := context.Background()
	c, app := client(t, Options{}), unique("go-audit")
	started := float64(time.Now().UnixMicro()) / 1e6
	must[*Session](t)(c.CreateSession(ctx, app, "ada", SessionCreate{SessionID: "private-chat"}))
	if err := c.DeleteSession(ctx, app, "ada", "private-chat"); err != nil {
		t.Fatal(err)
	}

	page := must[*AuditPage](t)(c.ListAuditRecords(ctx, AuditFilter{App: app, UserID: "ada", Action: "session.delete"}))
	if len(page.Records) != 1 || page.NextPageToken != nil {
		t.Fatalf("records %+v", page)
	}
	record := page.Records[0]
	if record.Action != "session.delete" || record.KeyID != nil || record.AppName == nil || *record.AppName != app ||
		record.Outcome != "ok" || math.Abs(record.Time-started) > 60 {
		t.Fatalf("record %+v", record)
	}
	// The user and the session are named by keyed hashes, never by their ids.
	session, _ := record.Detail["session"].(string)
	// A hash of 32 hex digits (which may hold "ada" by chance), never the id.
	if record.User == nil || !pseudonym.MatchString(*record.User) || session == "" {
		t.Fatalf("record %+v", record)
	}
	if said, _ := json.Marshal(record); strings.Contains(string(said), "private-chat") {
		t.Fatalf("the record names the session: %s", said)
	}

	if every := collect(t, c.AuditRecords(ctx, AuditFilter{App: app})); len(every) != 1 || every[0].Seq != record.Seq {
		t.Fatalf("every record %+v", every)
	}
	for _, asked := range []struct {
		filter AuditFilter
		want   int
	}{
		{AuditFilter{App: app, UserID: "bob"}, 0},
		{AuditFilter{App: app, AfterTimestamp: Float64(started - 60)}, 1},
		{AuditFilter{App: app, BeforeTimestamp: Float64(started - 60)}, 0},
	} {
		if got := must[*AuditPage](t)(c.ListAuditRecords(ctx, asked.filter)); len(got.Records) != asked.want {
			t.Errorf("%+v: %d records, not %d", asked.filter, len(got.Records), asked.want)
		}
	}
}

func TestAuditRecordsArePagedNewestFirst(t *testing.T) {
	ctx := context.Background()
	c, app := client(t, Options{}), unique("go-audit")
	for _, id := range []string{"s1", "s2", "s3"} {
		must[*Session](t)(c.CreateSession(ctx, app, "ada", SessionCreate{SessionID: id}))
		if err := c.DeleteSession(ctx, app, "ada", id); err != nil {
			t.Fatal(err)
		}
	}
	first := must[*AuditPage](t)(c.ListAuditRecords(ctx, AuditFilter{App: app, Page: Page{PageSize: Int64(2)}}))
	if len(first.Records) != 2 || first.NextPageToken == nil {
		t.Fatalf("first page %+v", first)
	}
	rest := must[*AuditPage](t)(c.ListAuditRecords(ctx, AuditFilter{App: app,
		Page: Page{PageSize: Int64(2), PageToken: *first.NextPageToken}}))
	if len(rest.Records) != 1 || rest.NextPageToken != nil {
		t.Fatalf("last page %+v", rest)
	}
	var seqs []int64
	for _, record := range append(first.Records, rest.Records...) {
		seqs = append(seqs, record.Seq)
	}
	if !slices.IsSortedFunc(seqs, func(a, b int64) int { return int(b - a) }) {
		t.Fatalf("not newest first: %v", seqs)
	}
	var every []int64
	for _, record := range collect(t, c.AuditRecords(ctx, AuditFilter{App: app, Page: Page{PageSize: Int64(1)}})) {
		every = append(every, record.Seq)
	}
	if !slices.Equal(every, seqs) {
		t.Fatalf("iterated %v, paged %v", every, seqs)
	}
}

func TestAnAuditUserWithoutAnAppIsRefused(t *testing.T) {
	c := client(t, Options{})
	_, err := c.ListAuditRecords(context.Background(), AuditFilter{UserID: "ada"})
	var refused *APIError
	if !errors.Is(err, ErrValidation) || !errors.As(err, &refused) || refused.Status != 422 {
		t.Fatalf("a user without an app: %v", err)
	}
}
