package llm

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"
)

// Class is the kind of a failed model call. Every error this package returns
// for a failed call matches exactly one Class with errors.Is, so callers can
// branch on it and the ledger can store it (the string value is the stored
// outcome).
type Class string

const (
	// ErrUnreachable: no connection to the model server.
	ErrUnreachable Class = "unreachable"
	// ErrModelMissing: the server does not have the model (not pulled, wrong name).
	ErrModelMissing Class = "model_missing"
	// ErrTimeout: the attempt ran past its configured timeout.
	ErrTimeout Class = "timeout"
	// ErrContextTooLong: the prompt does not fit the model's context window.
	ErrContextTooLong Class = "context_too_long"
	// ErrRateLimited: the provider asked us to slow down.
	ErrRateLimited Class = "rate_limited"
	// ErrAuth: the provider refused our credentials.
	ErrAuth Class = "auth"
	// ErrServer: the provider failed on its side (5xx, overloaded, error event).
	ErrServer Class = "server"
	// ErrIncomplete: the reply stream ended before the provider said it was done.
	ErrIncomplete Class = "incomplete"
	// ErrRejected: the provider refused the request as malformed (other 4xx).
	ErrRejected Class = "rejected"
	// ErrParse: the reply never matched the requested schema, see [ParseError].
	ErrParse Class = "parse"
	// ErrUnavailable: every provider that could serve the role failed, see
	// [UnavailableError]. Callers turn it into margin's offline behaviour.
	ErrUnavailable Class = "unavailable"
)

var classText = map[Class]string{
	ErrUnreachable:    "model server unreachable",
	ErrModelMissing:   "model not available on the server",
	ErrTimeout:        "model call timed out",
	ErrContextTooLong: "prompt longer than the model's context window",
	ErrRateLimited:    "rate limited by the provider",
	ErrAuth:           "provider refused the credentials",
	ErrServer:         "model server error",
	ErrIncomplete:     "reply ended before it was complete",
	ErrRejected:       "provider rejected the request",
	ErrParse:          "reply did not match the requested schema",
	ErrUnavailable:    "no model available",
}

func (c Class) Error() string {
	if s, ok := classText[c]; ok {
		return s
	}
	return string(c)
}

// Retryable reports whether trying the same provider again may help.
// Missing models, bad credentials, oversized prompts and rejected requests
// fail the same way every time, so they go straight to the fallback.
func (c Class) Retryable() bool {
	switch c {
	case ErrUnreachable, ErrTimeout, ErrRateLimited, ErrServer, ErrIncomplete:
		return true
	}
	return false
}

// CallError is a failed call to one provider, classified.
type CallError struct {
	Class    Class
	Provider string
	Model    string
	// Fix is what a person should do about it, e.g. "run `ollama pull qwen2.5:7b`".
	Fix string
	// RetryAfter is the wait the provider asked for (rate limits), if any.
	RetryAfter time.Duration
	// Err is the SDK's error.
	Err error
}

func (e *CallError) Error() string {
	var b strings.Builder
	b.WriteString(e.Provider)
	if e.Model != "" { // a probe of the server names no model
		b.WriteString(" " + e.Model)
	}
	fmt.Fprintf(&b, ": %s", e.Class.Error())
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	if e.Fix != "" {
		fmt.Fprintf(&b, " (%s)", e.Fix)
	}
	return b.String()
}

func (e *CallError) Is(target error) bool {
	c, ok := target.(Class)
	return ok && c == e.Class
}

func (e *CallError) Unwrap() error { return e.Err }

// retryable reports whether trying the same provider again within the
// call may help. A refused connection is an answer: nothing listens at the
// address, and a retry a second later finds the same (a local server that
// is not running), so the call goes on at once to the fallback or to the
// caller's offline behaviour. A dial that timed out, a 5xx or a cut stream
// may still pass on the next attempt.
func (e *CallError) retryable() bool {
	return e.Class.Retryable() && !errors.Is(e.Err, syscall.ECONNREFUSED)
}

// UnavailableError says that no provider could serve a role; Reasons holds
// each provider's last error (and why a fallback could not be tried). It
// matches [ErrUnavailable] and, through Reasons, each reason's [Class].
type UnavailableError struct {
	Role    string
	Reasons []error
}

func (e *UnavailableError) Error() string {
	parts := make([]string, len(e.Reasons))
	for i, r := range e.Reasons {
		parts[i] = r.Error()
	}
	return fmt.Sprintf("no model available for role %s: %s", e.Role, strings.Join(parts, "; "))
}

func (e *UnavailableError) Is(target error) bool {
	c, ok := target.(Class)
	return ok && c == ErrUnavailable
}

func (e *UnavailableError) Unwrap() []error { return e.Reasons }

// Away reports whether err says the model is away rather than wrong: every
// provider the call could use was unreachable or lacks the model (not
// pulled), or no provider is configured for the role. Such a failure is
// nobody's fault and passes when the model is back (SPEC §4.1 "Failure"):
// callers wait for the model instead of counting it. A server that
// answered badly (5xx, a timeout, a reply that never fit its schema) is
// not away.
func Away(err error) bool {
	var ue *UnavailableError
	if !errors.As(err, &ue) || len(ue.Reasons) == 0 {
		return false
	}
	away := false
	for _, r := range ue.Reasons {
		var ce *CallError
		switch {
		case errors.Is(r, errNoFallback), errors.Is(r, errCannotEmbed):
			// The fallback cannot serve the role at all: it is not a
			// provider the call waits for.
		case !errors.As(r, &ce) || ce.Class != ErrUnreachable && ce.Class != ErrModelMissing:
			return false
		default:
			away = true
		}
	}
	return away
}

// errNoFallback marks the reason of an [UnavailableError] that says the
// fallback provider has no model for the role.
var errNoFallback = errors.New("no fallback")

// ParseError says a structured reply never matched its schema, after the
// configured number of corrective retries.
type ParseError struct {
	Role     string
	Attempts int
	// Reply is the last reply, verbatim.
	Reply string
	Err   error
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("role %s: reply did not match the schema after %d attempts: %v", e.Role, e.Attempts, e.Err)
}

func (e *ParseError) Is(target error) bool {
	c, ok := target.(Class)
	return ok && c == ErrParse
}

func (e *ParseError) Unwrap() error { return e.Err }

// Fix returns the first actionable advice found in err's tree, or "".
// The server shows it next to an offline or degraded result.
func Fix(err error) string {
	switch e := err.(type) {
	case nil:
		return ""
	case *CallError:
		if e.Fix != "" {
			return e.Fix
		}
	case interface{ Unwrap() []error }:
		for _, r := range e.Unwrap() {
			if f := Fix(r); f != "" {
				return f
			}
		}
		return ""
	}
	return Fix(errors.Unwrap(err))
}

// DeadlineCut says that work of model calls was cut at its overall
// deadline d, which the config key sets: "cut at the 2m deadline
// (query.deadline)". Queries and wakes say it the same way.
func DeadlineCut(d time.Duration, key string) string {
	out := d.String()
	if strings.HasSuffix(out, "m0s") {
		out = strings.TrimSuffix(out, "0s")
	}
	if strings.HasSuffix(out, "h0m") {
		out = strings.TrimSuffix(out, "0m")
	}
	return "cut at the " + out + " deadline (" + key + ")"
}
