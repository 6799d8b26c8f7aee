package sessionary

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Problem is an error answer's RFC 9457 body. Code names the error: "session_not_found",
// "stale_session", "validation_error", ... (the API's list is in docs/api.md).
type Problem struct {
	Type            string                `json:"type"`
	Title           string                `json:"title"`
	Status          int                   `json:"status"`
	Detail          string                `json:"detail"`
	Code            string                `json:"code"`
	Instance        *string               `json:"instance,omitempty"`
	Errors          []ValidationErrorItem `json:"errors,omitempty"`
	CurrentVersion  *int64                `json:"currentVersion,omitempty"`
	CurrentRevision *int64                `json:"currentRevision,omitempty"`
	CallIDs         []string              `json:"callIds,omitempty"`
}

// ValidationErrorItem is one field a 422 refused: where (`loc`), why (`msg`).
type ValidationErrorItem struct {
	Loc  []any  `json:"loc"`
	Msg  string `json:"msg"`
	Type string `json:"type"`
}

// APIError is an error answer: the server said no. Compare it with errors.Is against the
// Err* values (by the problem's code, or by status for the generic ones), or take it with
// errors.As for its Problem (CurrentVersion of a stale session, CurrentRevision of a stale
// memory, CallIDs of pending calls).
// RequestID is the answer's X-Request-ID, the id the server logged the request under (the
// caller's, when it sent one); an error of a request refused before it was sent has none, nor
// a Header.
type APIError struct {
	Status    int
	Problem   Problem
	Header    http.Header
	RequestID string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("sessionary: %d %s: %s", e.Status, e.Problem.Code, e.Problem.Detail)
}

// Code is the problem's code, "http_error" for an answer that carried no problem (a proxy's).
func (e *APIError) Code() string { return e.Problem.Code }

// Is matches the Err* kinds: the kind of the problem's code (problemKinds, in spec_gen.go),
// the generic kind of its status (byStatus), or a status kind.
func (e *APIError) Is(target error) bool {
	if kind, ok := target.(*errorKind); ok && kind.status != 0 {
		return kind.status == e.Status
	}
	return target == problemKinds[e.Problem.Code] || target == byStatus[e.Status]
}

// errorKind is what the Err* values are: a problem code, or a status for any code.
type errorKind struct {
	code   string
	status int
}

func (k *errorKind) Error() string {
	if k.code != "" {
		return "sessionary: " + k.code
	}
	return fmt.Sprintf("sessionary: status %d", k.status)
}

// ErrUnavailable is any 503 answer (database_unavailable, too_many_streams, a proxy's, ...).
// The kind of each problem code is in spec_gen.go.
var ErrUnavailable error = &errorKind{status: http.StatusServiceUnavailable}

// byStatus is the kind every answer of a status is besides its code's, as the Python client's
// class of a status is the parent of its codes': errors.Is(err, ErrNotFound) for a
// session_not_found too.
var byStatus = map[int]error{
	http.StatusBadRequest:   ErrBadRequest,
	http.StatusUnauthorized: ErrUnauthorized,
	http.StatusForbidden:    ErrForbidden,
	http.StatusNotFound:     ErrNotFound,
	http.StatusConflict:     ErrConflict,
}

// ConnectionError is a request that got no answer (refused, reset, DNS, or no answer within
// Options.Timeout), after the resends allowed. Err is net/http's error; a cancellation of the
// caller's context is returned as it is (context.Canceled), never as a ConnectionError.
// RequestID is the X-Request-ID the request was sent with, if the caller gave one.
type ConnectionError struct {
	Method, URL string
	Err         error
	RequestID   string
}

func (e *ConnectionError) Error() string {
	return fmt.Sprintf("sessionary: %s %s: no answer: %v", e.Method, e.URL, e.Err)
}

func (e *ConnectionError) Unwrap() error { return e.Err }

// problemOf reads an error answer's body as a problem, or makes one of its status and text.
func problemOf(status int, body []byte) Problem {
	var problem Problem
	if json.Unmarshal(body, &problem) == nil && problem.Code != "" {
		return problem
	}
	detail := string(body)
	if len(detail) > 500 {
		detail = detail[:500]
	}
	return Problem{Type: "about:blank", Title: http.StatusText(status), Status: status,
		Code: "http_error", Detail: detail}
}

// refused is the error of a request the client does not send, since the server would refuse it:
// a 422 as the server's, loc naming what is wrong ("path", "session_id").
func refused(why string, loc ...string) *APIError {
	items := make([]any, len(loc))
	for i, part := range loc {
		items[i] = part
	}
	return &APIError{Status: 422, Problem: Problem{Type: "urn:sessionary:problem:validation_error",
		Title: "Invalid input", Status: 422, Detail: strings.Join(loc, ".") + ": " + why + " (not sent)",
		Code: "validation_error", Errors: []ValidationErrorItem{{Loc: items, Msg: why, Type: "value_error"}}}}
}
