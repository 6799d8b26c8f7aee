// S17's Go row: TASKS goroutines of one process appending to a session each at once, through
// one shared client. It prints a JSON line: events/s, and this process's CPU ms per append.
//
//	go run . -url http://127.0.0.1:8000 -tasks 32 -appends 60
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"sessionary.local/sessionary"
)

func cpu() time.Duration {
	var usage syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &usage)
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano())
}

func event(n int) sessionary.Event {
	text := strings.Repeat("Sunny in Oslo, up to 21 degrees, with a light breeze from the west. ", 3)
	return sessionary.Event{Author: "weather_agent", InvocationID: fmt.Sprintf("inv-%d", n/2),
		Content: sessionary.Text("model", text),
		Actions: &sessionary.EventActions{StateDelta: sessionary.State{"turn": n, "last_city": "Oslo"}}}
}

// appends is events/s and CPU ms per append of tasks goroutines appending appends events each.
func appends(ctx context.Context, client *sessionary.Client, tasks, count int) (float64, float64, error) {
	var b [3]byte
	_, _ = rand.Read(b[:])
	app := "s17-go-" + hex.EncodeToString(b[:])
	for n := range tasks {
		if _, err := client.CreateSession(ctx, app, fmt.Sprintf("u%d", n), sessionary.SessionCreate{SessionID: "s"}); err != nil {
			return 0, 0, err
		}
	}
	began, spent := time.Now(), cpu()
	errs := make(chan error, tasks)
	var wg sync.WaitGroup
	for n := range tasks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range count {
				if _, err := client.AppendEvent(ctx, app, fmt.Sprintf("u%d", n), "s", event(i)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, 0, err
	}
	total := float64(tasks * count)
	return total / time.Since(began).Seconds(), (cpu() - spent).Seconds() * 1000 / total, nil
}

func main() {
	url := flag.String("url", "http://127.0.0.1:8000", "the server")
	tasks := flag.Int("tasks", 32, "goroutines appending at once")
	count := flag.Int("appends", 60, "appends per goroutine")
	flag.Parse()
	client, err := sessionary.New(sessionary.Options{BaseURL: *url})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	if _, _, err := appends(ctx, client, *tasks, 10); err != nil { // warm-up
		log.Fatal(err)
	}
	rate, cpuMs, err := appends(ctx, client, *tasks, *count)
	if err != nil {
		log.Fatal(err)
	}
	_ = json.NewEncoder(os.Stdout).Encode(map[string]float64{"events_per_second": rate, "cpu_ms_per_event": cpuMs})
}
