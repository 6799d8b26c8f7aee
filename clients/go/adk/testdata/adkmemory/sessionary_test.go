// Package memory_test is where TestADKsOwnMemoryServiceTests runs ADK-Go's own tests of its
// in-memory memory service (google.golang.org/adk/v2/memory's inmemory_test.go, read from the
// module cache) against MemoryService: it writes them beside this file, in a module of its own
// made at test time, with sessionaryMemoryService(t) in place of memory.InMemoryService(),
// which they construct the service they test with.
package memory_test

import (
	"errors"
	"testing"

	"google.golang.org/adk/v2/memory"

	"sessionary.local/sessionary"
	"sessionary.local/sessionary/adk"
)

// sessionaryMemoryService is a MemoryService that recalls by words alone, as ADK-Go's
// in-memory service matches (its tests want no memory that shares no word with the query),
// and that starts from what a new in-memory service holds: no memory of the apps and users
// the tests use, and none of their sessions, which the server would remember instead.
func sessionaryMemoryService(t *testing.T) memory.Service {
	t.Helper()
	ctx := t.Context()
	client, err := sessionary.New(sessionary.Options{}) // SESSIONARY_URL
	if err != nil {
		t.Fatal(err)
	}
	for _, app := range []string{"app1", "other_app"} {
		for _, user := range []string{"user1", "test_user"} {
			for found, err := range client.Memories(ctx, app, user, sessionary.MemoryFilter{}) {
				if err == nil {
					err = client.DeleteMemory(ctx, app, user, found.ID)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			for _, id := range []string{"sess1", "sess2", "sess3"} {
				if err := client.DeleteSession(ctx, app, user, id); err != nil && !errors.Is(err, sessionary.ErrSessionNotFound) {
					t.Fatal(err)
				}
			}
		}
		for found, err := range client.AppMemories(ctx, app, sessionary.MemoryFilter{}) {
			if err == nil {
				err = client.DeleteAppMemory(ctx, app, found.ID)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	return adk.NewMemoryService(client, adk.WithRecall(sessionary.RecallQuery{Mode: "words"}))
}
