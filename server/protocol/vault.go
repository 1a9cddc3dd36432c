package protocol

import (
	"time"

	"github.com/margin-md/margin/agents/task"
	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/index"
)

// VaultStatus is the vault's state as the index and the watcher know it.
type VaultStatus = vault.Status

// StatusResult is vault/status's result.
type StatusResult struct {
	VaultStatus
	// OpenNotes are the notes open in the editor, whose buffers margin
	// treats as their truth.
	OpenNotes []string    `json:"openNotes"`
	Model     ModelStatus `json:"model"`
	Agents    AgentCounts `json:"agents"`
	// Embedding is how far the notes' vectors are, and whether search
	// can use them yet.
	Embedding EmbeddingStatus `json:"embedding"`
}

// EmbeddingStatus is vault/status's embedding: the notes' chunks embedded
// and left, at what rate, and why search is by keyword when it is.
type EmbeddingStatus struct {
	// State is off (no embedding model), opening (margin serve opens the
	// vectors a moment after its first scan) or the queue's: idle,
	// embedding, paused (the day's budget is spent), waiting (the model
	// failed; it retries at resumes) or stopped.
	State string `json:"state"`
	// KeywordOnly is set while a question cannot be searched by meaning:
	// no model, the model unreachable, or nothing embedded yet; why says
	// which.
	KeywordOnly bool   `json:"keywordOnly"`
	Why         string `json:"why,omitempty"`
	// Model is the embedder's fingerprint, provider/model@dims.
	Model     string  `json:"model,omitempty"`
	Embedded  int     `json:"embedded"`
	Left      int     `json:"left"`
	Rate      float64 `json:"rate"` // chunks a second over the last minute; 0 when not embedding
	Note      string  `json:"note,omitempty"`
	LastError string  `json:"lastError,omitempty"`
	// Resumes is when a paused or waiting queue tries again.
	Resumes time.Time `json:"resumes,omitzero"`
	// Reembedding is set after a change of model until every chunk has
	// a vector of the new one; modelBefore names the old one.
	Reembedding bool   `json:"reembedding,omitempty"`
	ModelBefore string `json:"modelBefore,omitempty"`
	TokensToday int    `json:"tokensToday"`
	DailyTokens int    `json:"dailyTokens"` // agents.daily_embed_token_budget; 0 for none
	// Elsewhere is set when another margin process embeds the vault.
	Elsewhere bool `json:"elsewhere,omitempty"`
}

// RelatedParams are vault/related's params: a note, and how many related
// notes at most (10 when 0).
type RelatedParams struct {
	Path  string `json:"path"`
	Limit int    `json:"limit,omitempty"`
}

// RelatedResult is vault/related's result: the notes nearest by meaning
// that the note neither links to nor is linked from, best first. Without
// vectors notes is empty and reason says why.
type RelatedResult struct {
	Notes  []RelatedNote `json:"notes"`
	Reason string        `json:"reason,omitempty"`
}

// RelatedNote is one related note, at its section nearest to the note.
type RelatedNote struct {
	Path    string  `json:"path"`
	Heading string  `json:"heading"`
	Line    int     `json:"line"`
	Score   float32 `json:"score"` // cosine similarity, -1 to 1
}

// ModelStatus is what vault/status says about the model that serves the
// task agents.
type ModelStatus struct {
	Provider  string    `json:"provider"`
	Model     string    `json:"model"`
	Reachable bool      `json:"reachable"`
	Checked   time.Time `json:"checked,omitzero"` // zero until a probe or a call has answered
	Error     string    `json:"error,omitempty"`
}

// AgentCounts are the agents by state.
type AgentCounts = task.Counts

// CoverageParams are vault/coverage's params: the state to list, or every
// file.
type CoverageParams struct {
	State string `json:"state,omitempty"` // indexed | skipped | failed
}

// CoverageResult is vault/coverage's result.
type CoverageResult struct {
	Files []FileState `json:"files"`
}

// FileState is one file's standing in the index.
type FileState = index.FileState

// SearchParams are vault/search's params: query is required unless from,
// to, glob or tags narrow the search.
type SearchParams struct {
	Query string   `json:"query,omitempty"`
	Mode  string   `json:"mode,omitempty"` // auto (default) | all | any | phrase
	From  string   `json:"from,omitempty"` // YYYY-MM-DD
	To    string   `json:"to,omitempty"`   // YYYY-MM-DD
	Glob  string   `json:"glob,omitempty"`
	Tags  []string `json:"tags,omitempty"`
	Limit int      `json:"limit,omitempty"`
	// Outputs also searches margin's own outputs (reports, journals,
	// change sets), which a search leaves out otherwise.
	Outputs bool `json:"outputs,omitempty"`
}

// SearchResult is vault/search's result: hits, how many notes matched in
// all, and whether the hits were cut to the limit.
type SearchResult = index.Result

// Hit is one matching note, at its best section.
type Hit = index.Hit

// RescanResult is vault/rescan's result: what the scan did.
type RescanResult struct {
	ScanResult
}

// ScanResult counts what a scan did.
type ScanResult = vault.ScanResult
