package adk

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"slices"
	"strings"

	"google.golang.org/adk/v2/artifact"
	"google.golang.org/genai"

	"sessionary.local/sessionary"
)

// ArtifactService is ADK-Go's artifact.Service backed by a Sessionary server, beside the
// session service: what an agent saves is kept with the session that made it, and forks,
// rewinds, expires and is deleted with it; a `user:` name is the user's, seen by each of its
// sessions.
//
//	runner.Config{SessionService: adk.NewService(client), ArtifactService: adk.NewArtifactService(client), …}
//
// It keeps the contract of ADK-Go's own artifact services (artifact.InMemoryService,
// gcsartifact), as follows:
//
//   - Versions count from 1, as ADK-Go's do, and Version 0 in a request means the newest. The
//     server counts from 0, as ADK's Python services do: ADK-Go's version n is the server's
//     n-1. The session service stores an event's ArtifactDelta as the server counts too, and
//     reads it back as ADK-Go does, so that the server's rewind restores the versions the
//     events name and ADK's Python agents read them as theirs. A version's CanonicalURI is the
//     server's (`…/versions/{n-1}`).
//   - Load, Versions and GetArtifactVersion of what is not there fail with an error that is
//     fs.ErrNotExist (and sessionary.ErrArtifactNotFound, or ErrSessionNotFound); Delete of it
//     is no error; List of a session that is not there lists the user's `user:` names, as
//     ADK-Go's services do. Save to a session that is not there fails: artifacts are kept
//     with their session.
//   - Load gives a Part as it was saved: InlineData (with its MIMEType, application/octet-stream
//     when it was saved without one, and DisplayName) or Text. A reference saved by another client (FileData, which ADK-Go's Save does not take)
//     loads as FileData, or, for an `artifact://` URI, as the bytes it names.
//   - Delete of one version (DeleteRequest.Version) fails with errors.ErrUnsupported: the
//     server deletes a name's versions together. SaveRequest.Version is not read, as ADK-Go's
//     own services do not read it: a save is the next version.
//
// Bytes are uploaded as they are (not in base64), so a Part's size is bounded by the server's
// limit on artifacts (512 MiB by default), not by its limit on request bodies.
type ArtifactService struct {
	client *sessionary.Client
}

var _ artifact.Service = (*ArtifactService)(nil)

// NewArtifactService is an artifact service that keeps its artifacts where client points.
func NewArtifactService(client *sessionary.Client) *ArtifactService {
	return &ArtifactService{client: client}
}

// scope is the session a name is kept under: the user's ("") for a `user:` name, whatever
// session asks, as ADK-Go's services keep those.
func scope(sessionID, name string) string {
	if strings.HasPrefix(name, "user:") {
		return ""
	}
	return sessionID
}

// serverVersion is ADK-Go's version as the server numbers it: nil, the newest, for 0 (or
// less, as ADK-Go's in-memory service reads it).
func serverVersion(version int64) *int64 {
	if version > 0 {
		return sessionary.Int64(version - 1)
	}
	return nil
}

// notFound is err, and fs.ErrNotExist too when it says the artifact or its session is not
// there, as ADK-Go's services fail then.
func notFound(err error) error {
	if errors.Is(err, sessionary.ErrArtifactNotFound) || errors.Is(err, sessionary.ErrSessionNotFound) {
		return fmt.Errorf("artifact not found: %w: %w", fs.ErrNotExist, err)
	}
	return err
}

func text(value *string) string {
	if value == nil {
		return ""
	}
	return *value
}

// Save stores the Part as the next version of its name: InlineData uploaded as bytes, Text as
// text.
func (s *ArtifactService) Save(ctx context.Context, req *artifact.SaveRequest) (*artifact.SaveResponse, error) {
	if err := req.Validate(); err != nil {
		return nil, fmt.Errorf("request validation failed: %w", err)
	}
	session := scope(req.SessionID, req.FileName)
	var saved *sessionary.ArtifactVersion
	var err error
	if data := req.Part.InlineData; data != nil {
		saved, err = s.client.UploadArtifact(ctx, req.AppName, req.UserID, session, req.FileName, sessionary.ArtifactUpload{
			Body: bytes.NewReader(data.Data), MimeType: data.MIMEType, DisplayName: data.DisplayName})
	} else {
		saved, err = s.client.SaveArtifact(ctx, req.AppName, req.UserID, session, sessionary.ArtifactSave{
			Filename: req.FileName, Artifact: sessionary.ArtifactPart{Text: req.Part.Text}})
	}
	if err != nil {
		return nil, err
	}
	return &artifact.SaveResponse{Version: saved.Version + 1}, nil
}

// Load is a version's Part (the newest unless req.Version): its record says what it was
// saved as, then its content is read, that version's.
func (s *ArtifactService) Load(ctx context.Context, req *artifact.LoadRequest) (*artifact.LoadResponse, error) {
	if err := req.Validate(); err != nil {
		return nil, fmt.Errorf("request validation failed: %w", err)
	}
	session := scope(req.SessionID, req.FileName)
	record, err := s.client.GetArtifactVersion(ctx, req.AppName, req.UserID, session, req.FileName,
		sessionary.ArtifactRead{Version: serverVersion(req.Version)})
	if err != nil {
		return nil, notFound(err)
	}
	if record.Kind == "reference" && !strings.HasPrefix(text(record.FileURI), "artifact://") {
		return &artifact.LoadResponse{Part: &genai.Part{FileData: &genai.FileData{
			FileURI: text(record.FileURI), MIMEType: text(record.MimeType), DisplayName: text(record.DisplayName)}}}, nil
	}
	content, err := s.client.DownloadArtifact(ctx, req.AppName, req.UserID, session, req.FileName,
		sessionary.ArtifactDownload{Version: &record.Version})
	if err != nil {
		return nil, notFound(err)
	}
	defer content.Close()
	data, err := io.ReadAll(content)
	if err != nil {
		return nil, err
	}
	part := &genai.Part{InlineData: &genai.Blob{Data: data, MIMEType: text(record.MimeType), DisplayName: text(record.DisplayName)}}
	switch {
	case content.Location != "": // an `artifact://` reference to a reference elsewhere
		part = &genai.Part{FileData: &genai.FileData{FileURI: content.Location}}
	case record.Kind == "text":
		part = &genai.Part{Text: string(data)}
	case record.Kind == "reference": // to another version, whose bytes these are
		part = &genai.Part{InlineData: &genai.Blob{Data: data, MIMEType: content.MimeType}}
	}
	return &artifact.LoadResponse{Part: part}, nil
}

// Delete deletes every version of the name; one that is not there is no error.
func (s *ArtifactService) Delete(ctx context.Context, req *artifact.DeleteRequest) error {
	if err := req.Validate(); err != nil {
		return fmt.Errorf("request validation failed: %w", err)
	}
	if req.Version != 0 {
		return fmt.Errorf("deleting version %d of %s alone: Sessionary deletes a name's versions together: %w",
			req.Version, req.FileName, errors.ErrUnsupported)
	}
	err := s.client.DeleteArtifact(ctx, req.AppName, req.UserID, scope(req.SessionID, req.FileName), req.FileName)
	if errors.Is(err, sessionary.ErrArtifactNotFound) || errors.Is(err, sessionary.ErrSessionNotFound) {
		return nil
	}
	return err
}

// everyOne is ListArtifacts' largest page.
var everyOne = sessionary.Page{PageSize: sessionary.Int64(1000)}

// List is the names of the session's artifacts and of its user's, sorted.
func (s *ArtifactService) List(ctx context.Context, req *artifact.ListRequest) (*artifact.ListResponse, error) {
	if err := req.Validate(); err != nil {
		return nil, fmt.Errorf("request validation failed: %w", err)
	}
	filter := sessionary.ArtifactFilter{Page: everyOne}
	names, err := collectNames(s.client.Artifacts(ctx, req.AppName, req.UserID, req.SessionID, filter))
	if errors.Is(err, sessionary.ErrSessionNotFound) {
		names, err = collectNames(s.client.Artifacts(ctx, req.AppName, req.UserID, "", filter))
	}
	if err != nil {
		return nil, err
	}
	slices.Sort(names) // as Go sorts strings: the server sorts as PostgreSQL does
	return &artifact.ListResponse{FileNames: names}, nil
}

func collectNames(all iter.Seq2[sessionary.ArtifactVersion, error]) ([]string, error) {
	names := []string{}
	for version, err := range all {
		if err != nil {
			return nil, err
		}
		names = append(names, version.Name)
	}
	return names, nil
}

// Versions is the name's versions, oldest first.
func (s *ArtifactService) Versions(ctx context.Context, req *artifact.VersionsRequest) (*artifact.VersionsResponse, error) {
	if err := req.Validate(); err != nil {
		return nil, fmt.Errorf("request validation failed: %w", err)
	}
	versions := []int64{}
	for version, err := range s.client.ArtifactVersions(ctx, req.AppName, req.UserID, scope(req.SessionID, req.FileName),
		req.FileName) {
		if err != nil {
			return nil, notFound(err)
		}
		versions = append(versions, version.Version+1)
	}
	if len(versions) == 0 {
		return nil, fmt.Errorf("artifact not found: %w", fs.ErrNotExist)
	}
	return &artifact.VersionsResponse{Versions: versions}, nil
}

// GetArtifactVersion is a version's record (the newest unless req.Version).
func (s *ArtifactService) GetArtifactVersion(ctx context.Context, req *artifact.GetArtifactVersionRequest) (*artifact.GetArtifactVersionResponse, error) {
	if err := req.Validate(); err != nil {
		return nil, fmt.Errorf("request validation failed: %w", err)
	}
	record, err := s.client.GetArtifactVersion(ctx, req.AppName, req.UserID, scope(req.SessionID, req.FileName),
		req.FileName, sessionary.ArtifactRead{Version: serverVersion(req.Version)})
	if err != nil {
		return nil, notFound(err)
	}
	return &artifact.GetArtifactVersionResponse{ArtifactVersion: &artifact.ArtifactVersion{
		Version: record.Version + 1, CanonicalURI: record.CanonicalURI, CustomMetadata: record.CustomMetadata,
		CreateTime: fromSeconds(record.CreateTime), MimeType: text(record.MimeType)}}, nil
}
