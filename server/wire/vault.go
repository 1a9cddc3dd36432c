package wire

import (
	"github.com/margin-md/margin/server/protocol"
	"github.com/margin-md/margin/server/workspace"
	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/index"
	"github.com/margin-md/margin/vault/retrieve"
)

// VaultStatus is s as the protocol sends it.
func VaultStatus(s vault.Status) protocol.VaultStatus {
	return protocol.VaultStatus{
		Vault: s.Vault, Notes: s.Notes, Outputs: s.Outputs, Tasks: s.Tasks, DailyNotes: s.DailyNotes, Templates: s.Templates,
		ChecklistItems: s.ChecklistItems, Indexed: s.Indexed, Skipped: s.Skipped, Failed: s.Failed,
		Watching: s.Watching, WatchedDirs: s.WatchedDirs, LastRescan: s.LastRescan, LastRescanReason: s.LastRescanReason,
		Degraded: s.Degraded, Warnings: s.Warnings,
	}
}

// ScanResult is r as the protocol sends it.
func ScanResult(r vault.ScanResult) protocol.ScanResult {
	return protocol.ScanResult{
		Files: r.Files, Unchanged: r.Unchanged, Updated: r.Updated, Touched: r.Touched,
		Removed: r.Removed, Skipped: r.Skipped, Failed: r.Failed, Duration: r.Duration,
	}
}

// IndexStatus is margin/indexStatus's params.
func IndexStatus(e vault.IndexEvent) protocol.IndexStatus {
	return protocol.IndexStatus{Kind: e.Kind, Reason: e.Reason, Result: ScanResult(e.Result), Status: VaultStatus(e.Status)}
}

// EmbeddingStatus is e as vault/status and margin status --json send it.
func EmbeddingStatus(e workspace.Embedding) protocol.EmbeddingStatus {
	return protocol.EmbeddingStatus{
		State: string(e.State), KeywordOnly: e.KeywordOnly, Why: e.Why, Model: e.Model,
		Embedded: e.Embedded, Left: e.Left, Rate: e.Rate, Note: e.Note, LastError: e.LastError, Resumes: e.Resumes,
		Reembedding: e.Reembedding, ModelBefore: e.ModelBefore, TokensToday: e.TokensToday, DailyTokens: e.DailyTokens,
		Elsewhere: e.Elsewhere,
	}
}

// FileStates are fs as the protocol sends them.
func FileStates(fs []index.FileState) []protocol.FileState {
	return list(fs, func(f index.FileState) protocol.FileState {
		return protocol.FileState{Path: f.Path, State: f.State, Reason: f.Reason}
	})
}

// SearchResult is r as the protocol sends it.
func SearchResult(r retrieve.Result) protocol.SearchResult {
	return protocol.SearchResult{
		Hits: list(r.Hits, func(h index.Hit) protocol.Hit {
			return protocol.Hit{Path: h.Path, Heading: h.Heading, Line: h.Line, SectionLine: h.SectionLine, Snippet: h.Snippet, Date: h.Date, Rank: h.Rank}
		}),
		Total: r.Total, Truncated: r.Truncated, Mode: string(r.Mode), Fallback: r.Fallback,
	}
}
