package protocol

import "time"

// ReviewsLatestParams are reviews/latest's params (and MCP get_review's).
type ReviewsLatestParams struct {
	Name string `json:"name"`
	// Date (YYYY-MM-DD) asks for that day's run; the latest when empty.
	Date string `json:"date,omitempty"`
}

// Review is one run of a scheduled review and its note as it is now.
type Review struct {
	Name string `json:"name"`
	// Path is the note, relative to the vault.
	Path string `json:"path"`
	Date string `json:"date"`
	Run  int64  `json:"run"`
	// Due is the scheduled time the run was for, absent for a run by hand.
	Due time.Time `json:"due,omitzero"`
	// From is absent for a review's first run, which read its whole scope.
	From             time.Time `json:"from,omitzero"`
	To               time.Time `json:"to"`
	Started          time.Time `json:"started"`
	Finished         time.Time `json:"finished,omitzero"`
	Status           string    `json:"status"`      // running | done
	GeneratedBy      string    `json:"generatedBy"` // a model id or "offline"
	Template         string    `json:"template"`    // name@version
	PromptTokens     int       `json:"promptTokens"`
	CompletionTokens int       `json:"completionTokens"`
	Detail           string    `json:"detail,omitempty"`
	Content          string    `json:"content"`
}
