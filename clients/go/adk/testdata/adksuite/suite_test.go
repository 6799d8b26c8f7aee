// Package sessionarysuite runs ADK-Go's own tests of an artifact service, the suite its
// in-memory and GCS services pass (google.golang.org/adk/v2/internal/artifact/tests, read from
// the module cache), against ArtifactService. Go lets only packages under
// google.golang.org/adk/v2 import ADK's internal ones, so TestADKsOwnArtifactServiceSuite runs
// this file in a module of its own named under that path, made at test time.
package sessionarysuite

import (
	"errors"
	"testing"

	"google.golang.org/adk/v2/artifact"
	"google.golang.org/adk/v2/internal/artifact/tests"

	"sessionary.local/sessionary"
	"sessionary.local/sessionary/adk"
)

func TestArtifactServiceSuite(t *testing.T) {
	client, err := sessionary.New(sessionary.Options{}) // SESSIONARY_URL
	if err != nil {
		t.Fatal(err)
	}
	tests.TestArtifactService(t, "Sessionary", func(t *testing.T) (artifact.Service, error) {
		return adk.NewArtifactService(client), reset(t, client)
	})
}

// reset gives each test of the suite what its in-memory run starts from: none of the names it
// saves, no artifacts where it reads none. The suite saves to testapp/testuser/testsession,
// which is made anew, and reads app/user/session as empty.
func reset(t *testing.T, client *sessionary.Client) error {
	ctx := t.Context()
	for _, key := range [][3]string{{"testapp", "testuser", "testsession"}, {"app", "user", "session"}} {
		app, user, session := key[0], key[1], key[2]
		if err := client.DeleteSession(ctx, app, user, session); err != nil && !errors.Is(err, sessionary.ErrSessionNotFound) {
			return err
		}
		for found, err := range client.Artifacts(ctx, app, user, "", sessionary.ArtifactFilter{}) {
			if err != nil {
				return err
			}
			if err := client.DeleteArtifact(ctx, app, user, "", found.Name); err != nil {
				return err
			}
		}
	}
	_, err := client.CreateSession(ctx, "testapp", "testuser", sessionary.SessionCreate{SessionID: "testsession"})
	return err
}
