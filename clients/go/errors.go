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
	Type           string                `json:"type"`
	Title          string                `json:"title"`
	Status         int                   `json:"status"`
	Detail         string                `json:"detail"`
	Code           string                `json:"code"`
	Instance       *string               `json:"instance,omitempty"`
	Errors         []ValidationErrorItem `json:"errors,omitempty"`
	CurrentVersion *int64                `json:"currentVersion,omitempty"`
	CallIDs        []string              `json:"callIds,omitempty"`
}

// ValidationErrorItem is one field a 422 refused: where (`loc`), why (`msg`).
type ValidationErrorItem struct {
	Loc  []any  `json:"loc"`
	Msg  string `json:"msg"`
	Type string `json:"type"`
}

// APIError is an error answer: the server said no. Compare it with errors.Is against the
// Err* values (by the problem's code, or by status for the generic ones), or take it with
// errors.As for its Problem (CurrentVersion of a stale session, CallIDs of pending calls).
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

// Is matches the Err* kinds: a code kind by the problem's code, a status kind by status.
func (e *APIError) Is(target error) bool {
	kind, ok := target.(*errorKind)
	if !ok {
		return false
	}
	if kind.code != "" {
		return kind.code == e.Problem.Code
	}
	return kind.status == e.Status
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

// The kinds of error answer, for errors.Is(err, sessionary.ErrSessionNotFound).
var (
	ErrSessionNotFound      error = &errorKind{code: "session_not_found"}
	ErrSessionAlreadyExists error = &errorKind{code: "session_already_exists"}
	ErrSessionClosed        error = &errorKind{code: "session_closed"}
	ErrEventConflict        error = &errorKind{code: "event_conflict"}
	ErrEventNotFound        error = &errorKind{code: "event_not_found"}
	ErrToolPairViolation    error = &errorKind{code: "tool_pair_violation"}
	ErrToolCallsPending     error = &errorKind{code: "tool_calls_pending"}
	ErrStaleSession         error = &errorKind{code: "stale_session"}
	ErrValidation           error = &errorKind{code: "validation_error"}
	ErrPayloadTooLarge      error = &errorKind{code: "payload_too_large"}
	ErrUnauthorized         error = &errorKind{status: http.StatusUnauthorized}
	ErrForbidden            error = &errorKind{status: http.StatusForbidden}
	ErrNotFound             error = &errorKind{status: http.StatusNotFound}
	ErrConflict             error = &errorKind{status: http.StatusConflict}
	ErrUnavailable          error = &errorKind{status: http.StatusServiceUnavailable}
)

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
