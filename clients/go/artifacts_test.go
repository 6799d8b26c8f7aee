package sessionary

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Artifacts against a live server: every method, for a session's names and for the user's,
// large content streamed both ways, ranges.

func names(versions []ArtifactVersion) []string {
	var got []string
	for _, version := range versions {
		got = append(got, version.Name+"@"+strconv.FormatInt(version.Version, 10))
	}
	return got
}

// read is a download's bytes, and it closed.
func read(t *testing.T, content *ArtifactContent) []byte {
	t.Helper()
	defer content.Close()
	data, err := io.ReadAll(content)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestEveryArtifactMethodServesASessionAndItsUser(t *testing.T) {
	ctx := context.Background()
	c, app := client(t, Options{}), unique("go-artifacts")
	session := must[*Session](t)(c.CreateSession(ctx, app, "ada", SessionCreate{SessionID: "s"}))
	other := must[*Session](t)(c.CreateSession(ctx, app, "ada", SessionCreate{SessionID: "t"}))

	// ADK's JSON: text, bytes, a reference.
	notes := must[*ArtifactVersion](t)(c.SaveArtifact(ctx, app, "ada", session.ID,
		ArtifactSave{Filename: "notes.txt", Artifact: ArtifactPart{Text: "Oslo, then Bergen."}}))
	if notes.Version != 0 || notes.Kind != "text" || notes.Size != 18 {
		t.Fatalf("saved %+v", notes)
	}
	chart := must[*ArtifactVersion](t)(c.SaveArtifact(ctx, app, "ada", session.ID, ArtifactSave{Filename: "chart.png",
		Artifact:       ArtifactPart{InlineData: &InlineArtifact{Data: []byte{0x89, 'P', 'N', 'G'}, MimeType: "image/png", DisplayName: "Chart"}},
		CustomMetadata: map[string]any{"source": "forecast"}}))
	if chart.Kind != "bytes" || *chart.MimeType != "image/png" || *chart.DisplayName != "Chart" || chart.CustomMetadata["source"] != "forecast" {
		t.Fatalf("saved %+v", chart)
	}
	must[*ArtifactVersion](t)(c.SaveArtifact(ctx, app, "ada", session.ID, ArtifactSave{Filename: "paper.pdf",
		Artifact: ArtifactPart{FileData: &ArtifactReference{FileURI: "https://example.com/paper.pdf", MimeType: "application/pdf"}}}))

	// Uploads: the next version each time; metadata in any script, through a header.
	metadata := map[string]any{"note": "café ☕ 𝄞", "rows": 2.0}
	for want := range int64(2) {
		csv := must[*ArtifactVersion](t)(c.UploadArtifact(ctx, app, "ada", session.ID, "reports/q1.csv", ArtifactUpload{
			Body: strings.NewReader("city,temp\nOslo,21\n"), MimeType: "text/csv", DisplayName: "Q1", CustomMetadata: metadata}))
		if csv.Version != want || *csv.MimeType != "text/csv" || *csv.DisplayName != "Q1" || csv.CustomMetadata["note"] != "café ☕ 𝄞" {
			t.Fatalf("uploaded %+v", csv)
		}
	}

	// The user's names: saved without a session, seen by each of its sessions.
	must[*ArtifactVersion](t)(c.UploadArtifact(ctx, app, "ada", "", "user:avatar.png",
		ArtifactUpload{Body: bytes.NewReader([]byte("avatar")), MimeType: "image/png"}))
	must[*ArtifactVersion](t)(c.SaveArtifact(ctx, app, "ada", other.ID,
		ArtifactSave{Filename: "user:bio.txt", Artifact: ArtifactPart{Text: "Ada."}}))

	listed := collect(t, c.Artifacts(ctx, app, "ada", session.ID, ArtifactFilter{Page: Page{PageSize: Int64(2)}}))
	if want := []string{"chart.png@0", "notes.txt@0", "paper.pdf@0", "reports/q1.csv@1", "user:avatar.png@0", "user:bio.txt@0"}; !slices.Equal(names(listed), want) {
		t.Fatalf("the session lists %v, not %v", names(listed), want)
	}
	page := must[*ArtifactPage](t)(c.ListArtifacts(ctx, app, "ada", other.ID, ArtifactFilter{}))
	if got := names(page.Artifacts); !slices.Equal(got, []string{"user:avatar.png@0", "user:bio.txt@0"}) || page.NextPageToken != nil {
		t.Fatalf("the other session lists %v", got)
	}
	users := collect(t, c.Artifacts(ctx, app, "ada", "", ArtifactFilter{}))
	if got := names(users); !slices.Equal(got, []string{"user:avatar.png@0", "user:bio.txt@0"}) {
		t.Fatalf("the user lists %v", got)
	}

	// Versions and their records.
	versions := must[*ArtifactVersionPage](t)(c.ListArtifactVersions(ctx, app, "ada", session.ID, "reports/q1.csv", Page{PageSize: Int64(1)}))
	if got := names(versions.Versions); !slices.Equal(got, []string{"reports/q1.csv@0"}) || versions.NextPageToken == nil {
		t.Fatalf("the first page of versions %v", got)
	}
	if all := collect(t, c.ArtifactVersions(ctx, app, "ada", session.ID, "reports/q1.csv")); !slices.Equal(names(all), []string{"reports/q1.csv@0", "reports/q1.csv@1"}) {
		t.Fatalf("versions %v", names(all))
	}
	latest := must[*ArtifactVersion](t)(c.GetArtifactVersion(ctx, app, "ada", session.ID, "reports/q1.csv", ArtifactRead{}))
	first := must[*ArtifactVersion](t)(c.GetArtifactVersion(ctx, app, "ada", session.ID, "reports/q1.csv", ArtifactRead{Version: Int64(0)}))
	if latest.Version != 1 || first.Version != 0 || !strings.HasSuffix(first.CanonicalURI, "/artifacts/reports/q1.csv/versions/0") {
		t.Fatalf("records %+v, %+v", latest, first)
	}
	avatar := must[*ArtifactVersion](t)(c.GetArtifactVersion(ctx, app, "ada", "", "user:avatar.png", ArtifactRead{}))
	if userVersions := collect(t, c.ArtifactVersions(ctx, app, "ada", "", "user:avatar.png")); len(userVersions) != 1 || avatar.Size != 6 {
		t.Fatalf("the user's avatar %+v, versions %+v", avatar, userVersions)
	}

	// Downloads: content with its type and hash; a reference as where it is; text as UTF-8.
	content := must[*ArtifactContent](t)(c.DownloadArtifact(ctx, app, "ada", session.ID, "reports/q1.csv", ArtifactDownload{Version: Int64(0)}))
	if data := read(t, content); string(data) != "city,temp\nOslo,21\n" || content.MimeType != "text/csv" ||
		content.SHA256 != *first.SHA256 || content.Version != 0 || content.Size != int64(len(data)) || content.Range != nil {
		t.Fatalf("downloaded %q, %+v", data, content)
	}
	reference := must[*ArtifactContent](t)(c.DownloadArtifact(ctx, app, "ada", session.ID, "paper.pdf", ArtifactDownload{}))
	if data := read(t, reference); reference.Location != "https://example.com/paper.pdf" || len(data) != 0 {
		t.Fatalf("a reference downloads as %+v, %q", reference, data)
	}
	text := must[*ArtifactContent](t)(c.DownloadArtifact(ctx, app, "ada", session.ID, "notes.txt", ArtifactDownload{}))
	if data := read(t, text); string(data) != "Oslo, then Bergen." || text.MimeType != "text/plain; charset=utf-8" {
		t.Fatalf("text downloads as %q, %+v", data, text)
	}
	unchanged := must[*ArtifactContent](t)(c.DownloadArtifact(ctx, app, "ada", session.ID, "chart.png",
		ArtifactDownload{IfNoneMatch: *chart.SHA256}))
	if data := read(t, unchanged); !unchanged.NotModified || len(data) != 0 || unchanged.SHA256 != *chart.SHA256 {
		t.Fatalf("content the caller has: %+v, %q", unchanged, data)
	}
	through := must[*ArtifactContent](t)(c.DownloadArtifact(ctx, app, "ada", other.ID, "user:avatar.png", ArtifactDownload{}))
	if data := read(t, through); string(data) != "avatar" {
		t.Fatalf("the user's avatar through a session: %q", data)
	}

	// As the session was: what was saved before the write that took a seq.
	event := must[*Event](t)(c.AppendEvent(ctx, app, "ada", other.ID, said("user", "saved")))
	must[*ArtifactVersion](t)(c.SaveArtifact(ctx, app, "ada", other.ID, ArtifactSave{Filename: "later.txt", Artifact: ArtifactPart{Text: "later"}}))
	before := must[*ArtifactPage](t)(c.ListArtifacts(ctx, app, "ada", other.ID, ArtifactFilter{UntilSeq: Int64(event.Seq)}))
	if got := names(before.Artifacts); slices.Contains(got, "later.txt@0") || len(got) != 2 {
		t.Fatalf("as at seq %d: %v", event.Seq, got)
	}

	// Deletes: every version; a later save starts again at 0.
	if err := c.DeleteArtifact(ctx, app, "ada", session.ID, "reports/q1.csv"); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteArtifact(ctx, app, "ada", "", "user:avatar.png"); err != nil {
		t.Fatal(err)
	}
	for _, gone := range []error{
		second(c.GetArtifactVersion(ctx, app, "ada", session.ID, "reports/q1.csv", ArtifactRead{})),
		second(c.DownloadArtifact(ctx, app, "ada", other.ID, "user:avatar.png", ArtifactDownload{})),
		c.DeleteArtifact(ctx, app, "ada", session.ID, "reports/q1.csv"),
	} {
		if !errors.Is(gone, ErrArtifactNotFound) || !errors.Is(gone, ErrNotFound) {
			t.Fatalf("a deleted artifact: %v", gone)
		}
	}
	again := must[*ArtifactVersion](t)(c.UploadArtifact(ctx, app, "ada", session.ID, "reports/q1.csv", ArtifactUpload{}))
	if again.Version != 0 || again.Size != 0 || *again.MimeType != "application/octet-stream" {
		t.Fatalf("saved again %+v", again)
	}

	// What the server would refuse, or has not.
	if _, err := c.ListArtifacts(ctx, app, "ada", "nobody", ArtifactFilter{}); !errors.Is(err, ErrSessionNotFound) {
		t.Fatalf("a missing session: %v", err)
	}
	if _, err := c.UploadArtifact(ctx, app, "ada", "", "chart.png", ArtifactUpload{}); !errors.Is(err, ErrValidation) {
		t.Fatalf("a session's name saved as the user's: %v", err)
	}
	for _, name := range []string{"", "../s/artifacts/chart.png", "reports/./q1.csv", "a\xff"} {
		var answer *APIError
		err := c.DeleteArtifact(ctx, app, "ada", session.ID, name)
		if !errors.As(err, &answer) || !errors.Is(err, ErrValidation) || answer.RequestID != "" {
			t.Fatalf("%q was sent: %v", name, err)
		}
	}
	if _, err := c.UploadArtifact(ctx, app, "ada", session.ID, "x", ArtifactUpload{CustomMetadata: map[string]any{"a": "\xff"}}); !errors.Is(err, ErrValidation) {
		t.Fatalf("metadata that is not UTF-8: %v", err)
	}
}

func second[T any](_ T, err error) error { return err }

// stream is n bytes that no one holds whole: a generator's, read as they are asked for.
type stream struct {
	left int64
	rng  *rand.ChaCha8
}

func (s *stream) Read(p []byte) (int, error) {
	if s.left <= 0 {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), s.left)]
	_, _ = s.rng.Read(p)
	s.left -= int64(len(p))
	return len(p), nil
}

func generated(n int64) *stream { return &stream{left: n, rng: rand.NewChaCha8([32]byte{7})} }

// Multi-MiB content goes up from a reader and comes down into a writer, neither side holding it
// whole; a range of it crosses the server's chunks.
func TestAMultiMiBArtifactStreamsBothWaysAndByRanges(t *testing.T) {
	ctx := context.Background()
	c, app := client(t, Options{}), unique("go-artifacts")
	session := must[*Session](t)(c.CreateSession(ctx, app, "ada", SessionCreate{}))
	const size = 12<<20 + 12345
	hash := sha256.New()
	must[int64](t)(io.Copy(hash, generated(size)))
	want := hex.EncodeToString(hash.Sum(nil))

	saved := must[*ArtifactVersion](t)(c.UploadArtifact(ctx, app, "ada", session.ID, "big.bin",
		ArtifactUpload{Body: generated(size), MimeType: "application/x-big"}))
	if saved.Size != size || *saved.SHA256 != want {
		t.Fatalf("stored %d bytes, SHA-256 %s", saved.Size, *saved.SHA256)
	}
	content := must[*ArtifactContent](t)(c.DownloadArtifact(ctx, app, "ada", session.ID, "big.bin", ArtifactDownload{}))
	hash.Reset()
	copied, err := io.Copy(hash, content)
	content.Close()
	if err != nil || copied != size || content.Size != size || hex.EncodeToString(hash.Sum(nil)) != want || content.SHA256 != want {
		t.Fatalf("downloaded %d bytes (%v), SHA-256 %x", copied, err, hash.Sum(nil))
	}

	whole := make([]byte, size)
	must[int](t)(io.ReadFull(generated(size), whole))
	for _, asked := range []struct {
		header      string
		first, last int64
	}{
		{"bytes=1048000-1049999", 1048000, 1049999}, // across the server's 1 MiB rows
		{"bytes=-100", size - 100, size - 1},
		{"bytes=12582900-", 12582900, size - 1},
	} {
		part := must[*ArtifactContent](t)(c.DownloadArtifact(ctx, app, "ada", session.ID, "big.bin",
			ArtifactDownload{Range: asked.header, IfRange: want}))
		data := read(t, part)
		if part.Range == nil || *part.Range != (ContentRange{asked.first, asked.last, size}) ||
			!bytes.Equal(data, whole[asked.first:asked.last+1]) || part.Size != int64(len(data)) {
			t.Fatalf("%s: %+v, %d bytes", asked.header, part.Range, len(data))
		}
	}
	// A range of content that changed since (If-Range): the whole of it.
	changed := must[*ArtifactContent](t)(c.DownloadArtifact(ctx, app, "ada", session.ID, "big.bin",
		ArtifactDownload{Range: "bytes=0-9", IfRange: strings.Repeat("0", 64)}))
	if data := read(t, changed); changed.Range != nil || len(data) != size {
		t.Fatalf("a range of changed content: %+v, %d bytes", changed.Range, len(data))
	}
	_, err = c.DownloadArtifact(ctx, app, "ada", session.ID, "big.bin", ArtifactDownload{Range: "bytes=20000000-"})
	if !errors.Is(err, ErrRangeNotSatisfiable) {
		t.Fatalf("a range past the end: %v", err)
	}
}

// An upload is sent once: a resend after its answer was lost would save another version.
func TestAnUploadWhoseAnswerIsLostIsNotSentAgain(t *testing.T) {
	ctx := context.Background()
	var sent atomic.Int32
	front := proxy(t, func(r *http.Request, _ *http.Response) bool {
		if r.Method == http.MethodPost && strings.Contains(r.URL.Path, "/artifacts/") {
			sent.Add(1)
			return true
		}
		return false
	})
	c, app := client(t, Options{BaseURL: front, Backoff: time.Millisecond}), unique("go-artifacts")
	session := must[*Session](t)(c.CreateSession(ctx, app, "ada", SessionCreate{}))
	_, err := c.UploadArtifact(ctx, app, "ada", session.ID, "once.txt", ArtifactUpload{Body: strings.NewReader("once")})
	if !errors.Is(err, &errorKind{status: http.StatusBadGateway}) || sent.Load() != 1 {
		t.Fatalf("sent %d times: %v", sent.Load(), err)
	}
	if versions := collect(t, c.ArtifactVersions(ctx, app, "ada", session.ID, "once.txt")); len(versions) != 1 {
		t.Fatalf("%d versions", len(versions))
	}
}

// refusing is a transport that refuses the first connection, after reading n bytes of the
// request's body, then sends through the default one.
type refusing struct {
	n     int
	tries int
	sent  []string
}

func (r *refusing) RoundTrip(req *http.Request) (*http.Response, error) {
	r.tries++
	if r.tries == 1 {
		_, _ = io.CopyN(io.Discard, req.Body, int64(r.n))
		req.Body.Close()
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	}
	body, _ := io.ReadAll(req.Body)
	r.sent = append(r.sent, string(body))
	return http.DefaultTransport.RoundTrip(req)
}

// An upload refused before any of it was read is sent again with it; one that read some of it
// cannot be.
func TestAnUploadIsSentAgainOnlyIfNoneOfItWasRead(t *testing.T) {
	ctx := context.Background()
	setup, app := client(t, Options{}), unique("go-artifacts")
	session := must[*Session](t)(setup.CreateSession(ctx, app, "ada", SessionCreate{}))
	for _, n := range []int{0, 3} {
		transport := &refusing{n: n}
		c := client(t, Options{HTTPClient: &http.Client{Transport: transport}, Backoff: time.Millisecond})
		body := io.MultiReader(strings.NewReader("all of "), strings.NewReader("it")) // no length, no rewind
		_, err := c.UploadArtifact(ctx, app, "ada", session.ID, "refused.txt", ArtifactUpload{Body: body})
		switch {
		case n == 0 && (err != nil || !slices.Equal(transport.sent, []string{"all of it"})):
			t.Fatalf("refused before it was read: sent %q, %v", transport.sent, err)
		case n > 0 && (!errors.Is(err, syscall.ECONNREFUSED) || transport.tries != 1):
			t.Fatalf("refused after %d bytes were read: sent %d times, %v", n, transport.tries, err)
		}
	}
}
