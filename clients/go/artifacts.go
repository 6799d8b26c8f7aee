package sessionary

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Artifacts are ADK's ArtifactService over HTTP. Each method serves a session's names and its
// user's `user:` names, or, with session "", the user's `user:` names alone (the API's
// `…_user_artifact…` operations): ListArtifacts(ctx, app, user, "", …) lists what every
// session of the user sees.

// artifactCall is do for the artifacts of a session, or of the user when session is "", at
// req.path under theirs: an id refused before sending is the call's error.
func (c *Client) artifactCall(ctx context.Context, req call, out any, app, user, session string) (*http.Response, error) {
	ids := []string{app, user, session}
	if session == "" {
		ids = ids[:2]
	}
	path, err := pathTo(req.path, ids...)
	if err != nil {
		return nil, err
	}
	req.path = path
	return c.do(ctx, req, out)
}

// artifactPath is "/artifacts/{name}" + rest, each of the name's `/`-separated segments
// escaped. A segment `.` or `..` is refused, as the server refuses it: URLs resolve dot
// segments, so it would reach another name or route.
func artifactPath(name, rest string) (string, error) {
	switch {
	case name == "":
		return "", refused("a name must not be empty", "path", "name")
	case !utf8.ValidString(name):
		return "", refused("a name must be valid UTF-8", "path", "name")
	}
	segments := strings.Split(name, "/")
	for i, segment := range segments {
		if segment == "." || segment == ".." {
			return "", refused("a name must not have a `.` or `..` segment", "path", "name")
		}
		segments[i] = url.PathEscape(segment)
	}
	return "/artifacts/" + strings.Join(segments, "/") + rest, nil
}

// ArtifactFilter picks the artifacts of a listing: as the session was at UntilSeq (nil: as
// now), the versions saved before the write that took that seq; `user:` names, which no
// session's history holds, as they are now.
type ArtifactFilter struct {
	Page
	UntilSeq *int64
}

// ListArtifacts is a page of the newest version of each artifact name, by name.
func (c *Client) ListArtifacts(ctx context.Context, app, user, session string, filter ArtifactFilter,
	options ...RequestOption) (*ArtifactPage, error) {
	q := filter.Page.query().int("untilSeq", filter.UntilSeq)
	var page ArtifactPage
	req := with(call{method: http.MethodGet, path: "/artifacts", query: url.Values(q)}, options)
	_, err := c.artifactCall(ctx, req, &page, app, user, session)
	return answer(&page, err)
}

// Artifacts is the newest version of every artifact name, page by page.
func (c *Client) Artifacts(ctx context.Context, app, user, session string, filter ArtifactFilter,
	options ...RequestOption) iter.Seq2[ArtifactVersion, error] {
	return pages(ctx, filter.Page, func(ctx context.Context, page Page) (*ArtifactPage, error) {
		filter.Page = page
		return c.ListArtifacts(ctx, app, user, session, filter, options...)
	}, func(p *ArtifactPage) ([]ArtifactVersion, *string) { return p.Artifacts, p.NextPageToken })
}

// SaveArtifact saves the next version of save.Filename from ADK's JSON: bytes (sent in
// base64), text, or a reference. The server reads the body whole, within its limit on
// request bodies: upload large files instead (UploadArtifact). Sent once.
func (c *Client) SaveArtifact(ctx context.Context, app, user, session string, save ArtifactSave,
	options ...RequestOption) (*ArtifactVersion, error) {
	var saved ArtifactVersion
	_, err := c.artifactCall(ctx, with(call{method: http.MethodPost, path: "/artifacts", body: save}, options),
		&saved, app, user, session)
	return answer(&saved, err)
}

// ArtifactUpload is an upload: Body, streamed as it is read, never held whole (read to its
// end and not closed: it is the caller's; nil: no bytes); MimeType, sent as its Content-Type
// ("": the server's application/octet-stream); DisplayName, ADK's; CustomMetadata, any JSON
// object kept with the version (nil: none).
type ArtifactUpload struct {
	Body           io.Reader
	MimeType       string
	DisplayName    string
	CustomMetadata map[string]any
}

// UploadArtifact saves the next version of name from upload.Body, streamed into storage, up to
// the server's limit (512 MiB by default; past it ErrPayloadTooLarge, and nothing is kept).
// Its length is sent when the body says it (a *bytes.Reader, *bytes.Buffer or
// *strings.Reader), else the body is sent chunked. Sent once, but after a refused connection,
// which read none of it; no Timeout bounds it, the context does.
func (c *Client) UploadArtifact(ctx context.Context, app, user, session, name string, upload ArtifactUpload,
	options ...RequestOption) (*ArtifactVersion, error) {
	path, err := artifactPath(name, "")
	if err != nil {
		return nil, err
	}
	req := call{method: http.MethodPost, path: path, upload: upload.Body, size: lengthOf(upload.Body),
		ctype: upload.MimeType, query: url.Values(query{}.str("displayName", upload.DisplayName)),
		header: http.Header{}}
	if upload.Body == nil {
		req.raw = []byte{}
	}
	if upload.CustomMetadata != nil {
		metadata, err := metadataHeader(upload.CustomMetadata)
		if err != nil {
			return nil, err
		}
		req.header.Set("Artifact-Metadata", metadata)
	}
	var saved ArtifactVersion
	_, err = c.artifactCall(ctx, with(req, options), &saved, app, user, session)
	return answer(&saved, err)
}

// lengthOf is the length of a body that says it (a *bytes.Reader, *bytes.Buffer or
// *strings.Reader), else 0: net/http then sends it chunked.
func lengthOf(body io.Reader) int64 {
	switch body := body.(type) {
	case *bytes.Reader:
		return int64(body.Len())
	case *bytes.Buffer:
		return int64(body.Len())
	case *strings.Reader:
		return int64(body.Len())
	}
	return 0
}

// metadataHeader is custom metadata as the Artifact-Metadata header carries it: a JSON object,
// its non-ASCII characters as \u escapes (a header's value is ASCII).
func metadataHeader(metadata map[string]any) (string, error) {
	data, err := json.Marshal(metadata)
	if err != nil {
		return "", fmt.Errorf("sessionary: Artifact-Metadata: %w", err)
	}
	if replacedUTF8(data) {
		return "", refused("strings must be valid UTF-8", "header", "Artifact-Metadata")
	}
	var header strings.Builder
	for _, r := range string(data) {
		switch {
		case r < utf8.RuneSelf:
			header.WriteRune(r)
		case r > 0xFFFF:
			high, low := utf16.EncodeRune(r)
			fmt.Fprintf(&header, `\u%04x\u%04x`, high, low)
		default:
			fmt.Fprintf(&header, `\u%04x`, r)
		}
	}
	return header.String(), nil
}

// ArtifactDownload picks what a download gives: Version (nil: the newest); Range, the bytes
// asked for, as HTTP writes them ("bytes=0-1023", "bytes=1024-", "bytes=-512": one range);
// IfRange, a SHA-256 (in hex) the range holds for, else the whole content comes; IfNoneMatch,
// the SHA-256 of content the caller has, which the server then does not send again.
type ArtifactDownload struct {
	Version     *int64
	Range       string
	IfRange     string
	IfNoneMatch string
}

// ArtifactContent is a download: the content, read as it arrives (close it when done), and
// what the answer says of it. A reference to content elsewhere comes as its Location, and
// content that IfNoneMatch named as NotModified; neither has bytes to read.
type ArtifactContent struct {
	io.ReadCloser
	Version  int64  // the version served
	MimeType string // its Content-Type
	SHA256   string // the SHA-256 of the version's whole content, in hex (its ETag)
	// Size is the length of what is read here (a range's, for a range), -1 when not said.
	Size int64
	// Range is the part sent, when a range was asked for and served (206); nil for the whole.
	Range       *ContentRange
	NotModified bool
	Location    string
}

// ContentRange is the bytes First to Last (inclusive, from 0) of content of Size bytes.
type ContentRange struct {
	First, Last, Size int64
}

// DownloadArtifact opens a version's content, streamed. A range that is not in the content is
// ErrRangeNotSatisfiable; a version ADK's rewind marked removed is ErrArtifactNotFound. A
// reference is followed by the server when it is an `artifact://` URI, else given as
// Location. Opening it is sent again when that is safe, as reads are; reading it is the
// caller's, bounded by the context, not by Timeout.
func (c *Client) DownloadArtifact(ctx context.Context, app, user, session, name string, download ArtifactDownload,
	options ...RequestOption) (*ArtifactContent, error) {
	path, err := artifactPath(name, "")
	if err != nil {
		return nil, err
	}
	header := http.Header{"Accept": {"*/*"}}
	for field, value := range map[string]string{"Range": download.Range, "If-Range": quoted(download.IfRange),
		"If-None-Match": quoted(download.IfNoneMatch)} {
		if value != "" {
			header.Set(field, value)
		}
	}
	req := call{method: http.MethodGet, path: path, query: url.Values(query{}.int("version", download.Version)),
		header: header, stream: true, answers: []int{http.StatusSeeOther, http.StatusNotModified}}
	resp, err := c.artifactCall(ctx, with(req, options), nil, app, user, session)
	if err != nil {
		return nil, err
	}
	content := &ArtifactContent{ReadCloser: resp.Body, MimeType: resp.Header.Get("Content-Type"),
		SHA256: strings.Trim(resp.Header.Get("ETag"), `"`), Size: resp.ContentLength}
	content.Version, _ = strconv.ParseInt(resp.Header.Get("Artifact-Version"), 10, 64)
	switch resp.StatusCode {
	case http.StatusSeeOther, http.StatusNotModified:
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		content.ReadCloser, content.Size = http.NoBody, 0
		content.Location = resp.Header.Get("Location")
		content.NotModified = resp.StatusCode == http.StatusNotModified
	case http.StatusPartialContent:
		var part ContentRange
		if _, err := fmt.Sscanf(resp.Header.Get("Content-Range"), "bytes %d-%d/%d", &part.First, &part.Last, &part.Size); err == nil {
			content.Range = &part
		}
	}
	return content, nil
}

// quoted is a SHA-256 as an ETag is written; "" stays "".
func quoted(sha256 string) string {
	if sha256 == "" {
		return ""
	}
	return `"` + sha256 + `"`
}

// ListArtifactVersions is a page of name's versions, oldest first.
func (c *Client) ListArtifactVersions(ctx context.Context, app, user, session, name string, page Page,
	options ...RequestOption) (*ArtifactVersionPage, error) {
	path, err := artifactPath(name, "/versions")
	if err != nil {
		return nil, err
	}
	var got ArtifactVersionPage
	req := with(call{method: http.MethodGet, path: path, query: url.Values(page.query())}, options)
	_, err = c.artifactCall(ctx, req, &got, app, user, session)
	return answer(&got, err)
}

// ArtifactVersions is every version of name, oldest first, page by page.
func (c *Client) ArtifactVersions(ctx context.Context, app, user, session, name string,
	options ...RequestOption) iter.Seq2[ArtifactVersion, error] {
	return pages(ctx, Page{}, func(ctx context.Context, page Page) (*ArtifactVersionPage, error) {
		return c.ListArtifactVersions(ctx, app, user, session, name, page, options...)
	}, func(p *ArtifactVersionPage) ([]ArtifactVersion, *string) { return p.Versions, p.NextPageToken })
}

// ArtifactRead picks a version: Version (nil: the newest).
type ArtifactRead struct {
	Version *int64
}

// GetArtifactVersion is one version's record, not its content.
func (c *Client) GetArtifactVersion(ctx context.Context, app, user, session, name string, read ArtifactRead,
	options ...RequestOption) (*ArtifactVersion, error) {
	version := "latest"
	if read.Version != nil {
		version = strconv.FormatInt(*read.Version, 10)
	}
	path, err := artifactPath(name, "/versions/"+version)
	if err != nil {
		return nil, err
	}
	var got ArtifactVersion
	_, err = c.artifactCall(ctx, with(call{method: http.MethodGet, path: path}, options), &got, app, user, session)
	return answer(&got, err)
}

// DeleteArtifact deletes every version of name; a later save of it starts again at version 0.
// Sent once: a resend would answer ErrArtifactNotFound for a delete that was done.
func (c *Client) DeleteArtifact(ctx context.Context, app, user, session, name string, options ...RequestOption) error {
	path, err := artifactPath(name, "")
	if err != nil {
		return err
	}
	_, err = c.artifactCall(ctx, with(call{method: http.MethodDelete, path: path}, options), nil, app, user, session)
	return err
}
