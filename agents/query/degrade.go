package query

import (
	"errors"
	"strings"

	"github.com/margin-md/margin/llm"
)

// modelFailure is an error the flow survives by degrading: no model, or a
// model whose replies never fit their schema.
func modelFailure(err error) bool {
	var class llm.Class
	return errors.Is(err, errNoModel) || errors.As(err, &class) || errors.Is(err, llm.ErrUnavailable) || errors.Is(err, llm.ErrParse)
}

var errNoModel = errors.New("no model is configured")

func degradedReason(err error) string {
	switch {
	case errors.Is(err, llm.ErrParse):
		return "the model's replies did not match the expected format"
	case errors.Is(err, errNoModel):
		return "no model is configured"
	}
	why := "no model was reachable"
	if !errors.Is(err, llm.ErrUnreachable) {
		// A server that answered badly is not an unreachable one: name
		// what went wrong, so the person looks in the right place.
		for _, c := range failedCalls {
			if errors.Is(err, c) {
				why = "the model call failed: " + c.Error()
				break
			}
		}
	}
	if fix := llm.Fix(err); fix != "" {
		return why + " (" + fix + ")"
	}
	return why
}

// failedCalls are the classes of a model server that was reached but did
// not answer usefully, most specific first.
var failedCalls = []llm.Class{
	llm.ErrModelMissing, llm.ErrAuth, llm.ErrContextTooLong, llm.ErrRateLimited,
	llm.ErrTimeout, llm.ErrIncomplete, llm.ErrServer, llm.ErrRejected,
}

// cut ends a flow whose deadline passed, with what it has, and names the
// next state: a log's parsed entry is still stored and an answer already
// written is given as partial; anything else finishes as degraded, which
// stores a log unparsed or answers a question with a plain search. No
// model is called after the cut.
func (e *Engine) cut(s *Session) (State, string) {
	s.Cut = llm.DeadlineCut(e.opts.Deadline, "query.deadline")
	e.log.Debug("query cut at its deadline", "state", s.State, "deadline", e.opts.Deadline)
	why := s.Cut + " in " + strings.ToLower(string(s.State))
	switch {
	case s.State == StateStore, s.State == StateDegraded:
		return s.State, why + "; finishing without a model"
	case s.Draft != nil:
		s.Partial = true
		return StateComplete, why + "; the answer so far"
	}
	s.Degraded = s.Cut
	return StateDegraded, why
}
