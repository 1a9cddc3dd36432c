package server

import (
	"slices"
	"strings"
)

// methods maps every method margin serves (besides initialize, exit and
// $/cancelRequest, which Handle routes itself) to its handler.
var methods = map[string]method{
	"initialized":            writer((*Server).initialized),
	"shutdown":               writer((*Server).shutdown),
	"textDocument/didOpen":   writer((*Server).didOpen),
	"textDocument/didChange": writer((*Server).didChange),
	"textDocument/didSave":   writer((*Server).didSave),
	"textDocument/didClose":  writer((*Server).didClose),

	"vault/status":   reader((*Server).vaultStatus),
	"vault/coverage": reader((*Server).vaultCoverage),
	"vault/search":   reader((*Server).vaultSearch),
	"vault/rescan":   writer((*Server).vaultRescan),
	"vault/related":  reader((*Server).vaultRelated),

	"agents/list":     reader((*Server).agentsList),
	"agents/get":      reader((*Server).agentsGet),
	"agents/create":   writer((*Server).agentsCreate),
	"agents/control":  writer((*Server).agentsControl),
	"agents/activity": reader((*Server).agentsActivity),
	"reports/get":     reader((*Server).reportsGet),
	"reviews/latest":  reader((*Server).reviewsLatest),

	"changes/list":    reader((*Server).changesList),
	"changes/preview": reader((*Server).changesPreview),
	// Decisions run in order with the edits that precede them, and the
	// serial queue is free to wait for a workspace/applyEdit answer: it
	// is not the connection's read loop.
	"changes/decide":     writer((*Server).changesDecide),
	"changes/confirmAll": writer((*Server).changesConfirmAll),
	"changes/undo":       writer((*Server).changesUndo),
	"decisions/list":     reader((*Server).decisionsList),

	"workspace/executeCommand": {orderedAs: commandMethod, call: adapt((*Server).executeCommand)},
	"textDocument/codeLens":    reader((*Server).codeLens),
	"textDocument/hover":       reader((*Server).hover),

	// Query flows run as reads although a log writes: see server/query.go.
	"query/ask":   reader((*Server).queryAsk),
	"query/reply": reader((*Server).queryReply),
	"log/append":  reader((*Server).logAppend),
	"context/get": reader((*Server).contextGet),

	"templates/list":     reader((*Server).templatesList),
	"templates/get":      reader((*Server).templatesGet),
	"templates/versions": reader((*Server).templatesVersions),
	"templates/save":     writer((*Server).templatesSave),
	"templates/rollback": writer((*Server).templatesRollback),
	// The evolution agent's model calls run as reads: see server/templates.go.
	"evolution/start":   reader((*Server).evolutionStart),
	"evolution/send":    reader((*Server).evolutionSend),
	"evolution/approve": writer((*Server).evolutionApprove),
	"evolution/reject":  writer((*Server).evolutionReject),
}

// methodNames lists margin's own methods for initialize's capabilities.
func methodNames() []string {
	var names []string
	for name := range methods {
		// LSP's own methods are announced by their capabilities.
		if !slices.Contains([]string{"initialized", "shutdown"}, name) && !strings.HasPrefix(name, "textDocument/") && !strings.HasPrefix(name, "workspace/") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}
