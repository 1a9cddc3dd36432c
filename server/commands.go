package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/server/protocol"
	"github.com/margin-md/margin/server/wire"
)

// editorCommands are the commands workspace/executeCommand runs (SPEC §6,
// protocol.EditorCommands): the buttons an editor plugin shows (code
// lenses, code actions) call them.
var editorCommands = func() []string {
	names := make([]string, len(protocol.EditorCommands))
	for i, c := range protocol.EditorCommands {
		names[i] = c.Name
	}
	return names
}()

// commandMethods names the method each command reaches, which it is
// ordered as (see Handle): a decision or a wake as a write, after the edits
// sent before it and before those sent after; margin.ask as a read, as it
// may take several model calls and must not hold up document sync.
var commandMethods = func() map[string]string {
	m := make(map[string]string, len(protocol.EditorCommands))
	for _, c := range protocol.EditorCommands {
		m[c.Name] = c.Method
	}
	return m
}()

// commandMethod is the method the command in executeCommand's params
// reaches; "" for a command margin does not run (executeCommand says so).
func commandMethod(params *json.RawMessage) string {
	var p executeCommandParams
	if decodeParams(params, &p) != nil {
		return ""
	}
	return commandMethods[p.Command]
}

type executeCommandParams struct {
	Command   string            `json:"command"`
	Arguments []json.RawMessage `json:"arguments"`
}

// stringArgs decodes the command's arguments as strings, n required and
// up to max.
func (p *executeCommandParams) stringArgs(n, max int, names string) ([]string, error) {
	if len(p.Arguments) < n || len(p.Arguments) > max {
		return nil, invalidParams("arguments", fmt.Sprintf("%s takes %s", p.Command, names))
	}
	out := make([]string, len(p.Arguments))
	for i, raw := range p.Arguments {
		if err := json.Unmarshal(raw, &out[i]); err != nil || out[i] == "" && i < n {
			return nil, invalidParams(fmt.Sprintf("arguments[%d]", i), fmt.Sprintf("%s takes %s", p.Command, names))
		}
	}
	return out, nil
}

// executeCommand runs each command as the method it reaches, ordered as
// that method is (commandMethods).
func (s *Server) executeCommand(ctx context.Context, p *executeCommandParams) (any, error) {
	switch p.Command {
	case "margin.confirm", "margin.reject":
		args, err := p.stringArgs(2, 3, "[changeSetId, itemId] (and for margin.reject an optional reason)")
		if err != nil {
			return nil, err
		}
		d := protocol.ItemDecision{Item: args[1], Verdict: changes.Confirmed}
		if p.Command == "margin.reject" {
			d.Verdict = changes.Rejected
			if len(args) == 3 {
				d.Reason = args[2]
			}
		}
		return s.changesDecide(ctx, &protocol.ChangesDecideParams{ID: args[0], Decisions: []protocol.ItemDecision{d}})
	case "margin.preview":
		args, err := p.stringArgs(2, 2, "[changeSetId, itemId]")
		if err != nil {
			return nil, err
		}
		return s.changesPreview(ctx, &protocol.ChangesPreviewParams{ID: args[0], Item: args[1]})
	case "margin.confirmAll":
		args, err := p.stringArgs(1, 1, "[changeSetId]")
		if err != nil {
			return nil, err
		}
		return s.changesConfirmAll(ctx, &protocol.ChangesConfirmAllParams{ID: args[0]})
	case "margin.undo":
		args, err := p.stringArgs(1, 2, "[changeSetId] and optionally an itemId")
		if err != nil {
			return nil, err
		}
		u := protocol.ChangesUndoParams{ID: args[0]}
		if len(args) == 2 {
			u.Item = args[1]
		}
		return s.changesUndo(ctx, &u)
	case "margin.showChanges":
		args, err := p.stringArgs(1, 1, "[changeSetId]")
		if err != nil {
			return nil, err
		}
		return s.showChanges(ctx, args[0])
	case "margin.wake":
		args, err := p.stringArgs(1, 1, "[agentId]")
		if err != nil {
			return nil, err
		}
		return s.agentsControl(ctx, &protocol.AgentsControlParams{ID: args[0], Action: "wake"})
	case "margin.showRelated":
		args, err := p.stringArgs(1, 1, "[path]")
		if err != nil {
			return nil, err
		}
		return s.showRelated(ctx, args[0])
	case "margin.ask":
		args, err := p.stringArgs(1, 1, "[question]")
		if err != nil {
			return nil, err
		}
		return s.queryAsk(ctx, &protocol.AskParams{Text: args[0]})
	}
	return nil, invalidParams("command", fmt.Sprintf("unknown command %q; margin runs %v", p.Command, editorCommands))
}

// showChanges opens a change set's file in the editor (window/showDocument)
// when the client can show documents, and returns the set, so a client
// that cannot still lists its items.
func (s *Server) showChanges(ctx context.Context, id string) (protocol.ShowChangesResult, error) {
	ws, v, err := s.agentsReady(ctx)
	if err != nil {
		return protocol.ShowChangesResult{}, err
	}
	cs, err := ws.Changes.Store().ChangeSet(ctx, id)
	if err != nil {
		return protocol.ShowChangesResult{}, err
	}
	res := protocol.ShowChangesResult{ChangeSet: wire.ChangeSet(cs)}
	s.mu.Lock()
	canShow := s.client.Window.ShowDocument.Support
	s.mu.Unlock()
	if !canShow {
		return res, nil
	}
	var shown struct {
		Success bool `json:"success"`
	}
	if err := s.conn.Call(ctx, "window/showDocument", map[string]any{"uri": fileURI(v.Dir(), cs.Path), "takeFocus": true}, &shown); err != nil {
		return res, fmt.Errorf("window/showDocument: %w", err)
	}
	res.Shown = shown.Success
	return res, nil
}

// fileURI is the file:// URI of the vault path p.
func fileURI(vaultDir, p string) string {
	abs := filepath.ToSlash(filepath.Join(vaultDir, filepath.FromSlash(p)))
	if !strings.HasPrefix(abs, "/") {
		abs = "/" + abs // a Windows drive letter
	}
	return (&url.URL{Scheme: "file", Path: abs}).String()
}
