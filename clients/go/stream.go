package sessionary

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Frame is one server-sent event of a live stream: Event names the change ("appended",
// "updated", "removed", "trimmed", "reset", "resync", "closed", "deleted", "child" on a
// session's stream; "created", "updated", "closed", "deleted" on a user's or an app's, and
// "erased", {"userId": …} (null for the whole app), when the user or the app is erased), ID is
// the position it carries (an appended event's seq; 0 when it has none), Data is its JSON.
type Frame struct {
	Event string
	ID    int64
	Data  json.RawMessage
}

// Decode reads the frame's data into v: an *Event for "appended".
func (f Frame) Decode(v any) error { return json.Unmarshal(f.Data, v) }

// StreamOptions tune a live stream. A session's stream replays from the log what came after
// AfterSeq (Int64(0): the whole session), then goes on live (nil: from now). IdleTimeout is how
// long without a byte, not even a heartbeat, before the connection is taken for lost and opened
// again (default 60 s; the server sends a heartbeat every 15).
type StreamOptions struct {
	AfterSeq    *int64
	IdleTimeout time.Duration
}

// StreamEvents is the session's changes as they are committed, live. A lost connection is
// opened again after the last frame received (`Last-Event-ID`), losing and repeating nothing;
// the iteration ends after "closed" or "deleted", or with ctx's error when ctx ends. Each
// connection is opened with the RequestOptions (WithHeader, WithMaxRetries).
func (c *Client) StreamEvents(ctx context.Context, app, user, id string, stream StreamOptions,
	options ...RequestOption) iter.Seq2[Frame, error] {
	path, err := pathTo("/events:stream", app, user, id)
	position := ""
	if stream.AfterSeq != nil {
		position = strconv.FormatInt(*stream.AfterSeq, 10)
	}
	return c.follow(ctx, path, err, position, stream, options, endsSession)
}

// StreamSessions is a user's sessions as they are created, updated, closed and deleted, from
// now, until ctx ends or the user is erased: "erased" (its data {"userId": …}, null when the
// whole app is), after each of the user's sessions' "deleted", is the last frame. A lost
// connection is opened again; what happened meanwhile is not sent (list to catch up).
func (c *Client) StreamSessions(ctx context.Context, app, user string, stream StreamOptions,
	options ...RequestOption) iter.Seq2[Frame, error] {
	path, err := pathTo("/sessions:stream", app, user)
	return c.follow(ctx, path, err, "", stream, options, endsUser)
}

// StreamAppSessions is StreamSessions for every user of the app: an erased user's "erased" is
// told and the iteration goes on; the app's ("userId" null) is its last frame.
func (c *Client) StreamAppSessions(ctx context.Context, app string, stream StreamOptions,
	options ...RequestOption) iter.Seq2[Frame, error] {
	path, err := pathTo("/sessions:stream", app)
	return c.follow(ctx, path, err, "", stream, options, endsApp)
}

// endsSession: a session's stream ends after "closed" or "deleted", when nothing more can
// happen to it.
func endsSession(frame Frame) bool { return frame.Event == "closed" || frame.Event == "deleted" }

// endsUser: a user's stream ends after "erased", the user's or the whole app's (the server
// ends it).
func endsUser(frame Frame) bool { return frame.Event == "erased" }

// endsApp: an app's stream ends after the app's "erased" (its "userId" null); a user's is told
// and the stream goes on.
func endsApp(frame Frame) bool {
	if frame.Event != "erased" {
		return false
	}
	var erased struct {
		UserID *string `json:"userId"`
	}
	return frame.Decode(&erased) != nil || erased.UserID == nil
}

// follow yields the frames of a stream until one that ends says is its last, across
// connections: each is opened after position (`Last-Event-ID`), the last id seen; one lost
// (dropped, ended by the server, silent past the idle timeout) is opened again, Retries times
// in a row at most (or WithMaxRetries'); any frame received resets that count.
func (c *Client) follow(ctx context.Context, path string, pathErr error, position string, stream StreamOptions,
	options []RequestOption, ends func(Frame) bool) iter.Seq2[Frame, error] {
	idle := stream.IdleTimeout
	if idle <= 0 {
		idle = 60 * time.Second
	}
	settings := c.settle(with(call{}, options))
	return func(yield func(Frame, error) bool) {
		if pathErr != nil {
			yield(Frame{}, pathErr)
			return
		}
		for losses := 0; ; {
			req := with(call{method: http.MethodGet, path: path, stream: true,
				header: http.Header{"Accept": {"text/event-stream"}}}, options)
			if position != "" {
				req.header.Set("Last-Event-ID", position)
			}
			connection, cancel := context.WithCancel(ctx)
			resp, err := c.do(connection, req, nil)
			lost := err
			if err == nil {
				var done bool
				done, lost = readFrames(resp.Body, idle, cancel, func(frame Frame) bool {
					losses = 0
					if frame.ID != 0 {
						position = strconv.FormatInt(frame.ID, 10)
					}
					if !yield(frame, nil) {
						return false
					}
					return !ends(frame)
				})
				resp.Body.Close()
				if done {
					cancel()
					return
				}
			}
			cancel()
			var apiErr *APIError
			switch {
			case ctx.Err() != nil:
				yield(Frame{}, ctx.Err())
				return
			case errors.As(lost, &apiErr):
				yield(Frame{}, lost)
				return
			}
			if losses++; losses > settings.retries {
				yield(Frame{}, &ConnectionError{Method: "GET", URL: path, RequestID: c.requestID(settings),
					Err: fmt.Errorf("the stream was lost %d times in a row: %w", losses, lost)})
				return
			}
			select {
			case <-ctx.Done():
				yield(Frame{}, ctx.Err())
				return
			case <-time.After(c.backoffWait(losses - 1)):
			}
		}
	}
}

// readFrames hands each frame of a text/event-stream body to each, heartbeats (comments)
// skipped, until each says stop (done) or the body ends or fails (the error why). A body
// silent for idle is closed, by cancel.
func readFrames(body io.Reader, idle time.Duration, cancel context.CancelFunc, each func(Frame) bool) (bool, error) {
	watchdog := time.AfterFunc(idle, cancel)
	defer watchdog.Stop()
	lines := bufio.NewReader(body)
	var event, id string
	var data []string
	for {
		line, err := lines.ReadString('\n')
		watchdog.Reset(idle)
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF // the server ended the stream
			}
			return false, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if data != nil {
				frame := Frame{Event: event, Data: json.RawMessage(strings.Join(data, "\n"))}
				if frame.Event == "" {
					frame.Event = "message"
				}
				frame.ID, _ = strconv.ParseInt(id, 10, 64)
				if !each(frame) {
					return true, nil
				}
			}
			event, id, data = "", "", nil
			continue
		}
		name, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch name {
		case "": // a comment: a heartbeat
		case "data":
			data = append(data, value)
		case "event":
			event = value
		case "id":
			id = value
		}
	}
}
