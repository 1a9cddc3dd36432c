package protocol

import (
	"time"

	"github.com/margin-md/margin/agents/task"
	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/index"
	"github.com/margin-md/margin/vault/retrieve"
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
// when a search by meaning ran by keyword, why (fallback).
type SearchResult = retrieve.Result

// Hit is one matching note, at its best section.
type Hit = index.Hit

// RescanResult is vault/rescan's result: what the scan did.
type RescanResult struct {
	ScanResult
}

// ScanResult counts what a scan did.
type ScanResult = vault.ScanResult
