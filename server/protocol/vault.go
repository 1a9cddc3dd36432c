package protocol

import "time"

// VaultStatus is the vault's state as the index and the watcher know it.
type VaultStatus struct {
	Vault string `json:"vault"`
	// Notes are the person's notes; margin's own files (reports,
	// journals, change sets, its templates) are Outputs.
	Notes      int `json:"notes"`
	Outputs    int `json:"outputs"`
	Tasks      int `json:"tasks"`
	DailyNotes int `json:"dailyNotes"`
	// Templates are the notes in Obsidian's templates folders, among Notes.
	Templates int `json:"templates"`
	// ChecklistItems are the `- [ ]` lines in the person's notes.
	ChecklistItems   int       `json:"checklistItems"`
	Indexed          int       `json:"indexed"`
	Skipped          int       `json:"skipped"`
	Failed           int       `json:"failed"`
	Watching         bool      `json:"watching"`
	WatchedDirs      int       `json:"watchedDirs"`
	LastRescan       time.Time `json:"lastRescan,omitzero"` // absent before any rescan
	LastRescanReason string    `json:"lastRescanReason,omitempty"`
	// Degraded is empty when everything is watched; otherwise it says what
	// margin cannot see change, and why.
	Degraded string `json:"degraded,omitempty"`
	// Warnings are settings margin could not read and what it does instead.
	Warnings []string `json:"warnings,omitempty"`
}

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
type AgentCounts struct {
	Active  int `json:"active"`
	Dormant int `json:"dormant"`
	Queued  int `json:"queued"`
	Running int `json:"running"`
	// Routing counts batches of vault changes not yet routed to the
	// agents: wakes may come of them, so the agents are not idle yet.
	Routing int `json:"routing"`
	// WaitingForModel counts the agents whose wake waits for a model
	// that is away.
	WaitingForModel int `json:"waitingForModel"`
	// TokensToday are the model tokens the wakes spent today (the local
	// day), against DailyTokenBudget (0: no limit); BudgetSpent says the
	// wakes that need the model wait for the next day.
	TokensToday      int  `json:"tokensToday"`
	DailyTokenBudget int  `json:"dailyTokenBudget"`
	BudgetSpent      bool `json:"budgetSpent"`
}

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
type FileState struct {
	Path   string `json:"path"`
	State  string `json:"state"` // indexed | skipped | failed
	Reason string `json:"reason"`
}

// SearchParams are vault/search's params: query is required unless from,
// to, glob or tags narrow the search.
type SearchParams struct {
	Query string   `json:"query,omitempty"`
	Mode  string   `json:"mode,omitempty"` // auto (default) | all | any | phrase | semantic | hybrid
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
// all, whether the hits were cut to the limit, the mode that ran and,
// when a search by meaning ran by keyword, why.
type SearchResult struct {
	Hits      []Hit `json:"hits"`
	Total     int   `json:"total"`
	Truncated bool  `json:"truncated"`
	// Mode is the mode that ran: auto, all, any, phrase, semantic or hybrid.
	Mode string `json:"mode"`
	// Fallback, when a search by meaning ran by keyword, says why: "no
	// embedding model", "no vectors yet", "vectors of another model",
	// "embedding model unavailable" or "no text to search by meaning".
	Fallback string `json:"fallback,omitempty"`
}

// Hit is one matching note, at its best section.
type Hit struct {
	Path    string `json:"path"`
	Heading string `json:"heading"` // as written; "" for text before the first heading
	Line    int    `json:"line"`    // 1-based line of the first match in the section
	// SectionLine is the line of the section's heading (or of the note
	// body for text before the first heading): where the section starts.
	SectionLine int     `json:"section_line"`
	Snippet     string  `json:"snippet"` // a short excerpt, matched words between ** and **
	Date        string  `json:"date,omitempty"`
	Rank        float64 `json:"rank,omitempty"`
}

// RescanResult is vault/rescan's result: what the scan did.
type RescanResult struct {
	ScanResult
}

// ScanResult counts what a scan did.
type ScanResult struct {
	Files     int           `json:"files"`     // files seen
	Unchanged int           `json:"unchanged"` // same size and mtime as indexed: not read
	Updated   int           `json:"updated"`   // read and (re)indexed
	Touched   int           `json:"touched"`   // read, same content: only the stat refreshed
	Removed   int           `json:"removed"`   // indexed but gone
	Skipped   int           `json:"skipped"`
	Failed    int           `json:"failed"`
	Duration  time.Duration `json:"duration"` // in nanoseconds
}

// ShowRelatedResult is margin.showRelated's result: the notes related to
// the note whose "Related:" lens was clicked, and whether the editor was
// asked to open the first of them (at its nearest section).
type ShowRelatedResult struct {
	RelatedResult
	Shown bool `json:"shown"`
}
