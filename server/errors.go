package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"syscall"

	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/edit"
	"github.com/margin-md/margin/vault/history"
	"github.com/sourcegraph/jsonrpc2"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Protocol error codes margin uses besides JSON-RPC's own.
const (
	codeServerNotInitialized = -32002 // LSP: a request before initialize
	codeRequestCancelled     = -32800 // LSP: the client cancelled the request
)

// Application error codes, -33099..-33000. README.md documents them; the
// numbers are part of the contract with editor plugins, so never reuse one.
const (
	CodeNotFound         = -33000 // a note, task, agent, change set or session does not exist
	CodeConflict         = -33001 // the note changed since margin read it; nothing was written
	CodeStale            = -33002 // a change no longer applies to the current note
	CodeModelUnavailable = -33003 // no model provider is reachable
	CodeOutsideVault     = -33004 // a path resolves outside the vault
	CodeNoVault          = -33005 // no vault is open (initialize had no root)
	CodeInvalidNote      = -33006 // the note cannot be parsed (e.g. broken frontmatter)
	CodeRefused          = -33007 // refused as things stand: a closed evolution session, no proposal yet, the evolution depth limit
	CodeStorage          = -33008 // the vault or the state database cannot be written (disk full, read-only, no permission)
)

// paramError is an invalid-params error naming the bad field.
type paramError struct {
	field, problem string
}

func (e *paramError) Error() string { return fmt.Sprintf("invalid params: %s: %s", e.field, e.problem) }

func invalidParams(field, problem string) error { return &paramError{field, problem} }

// decodeParams unmarshals params, turning JSON type errors into errors that
// name the offending field. An empty array counts as no params: Lua clients
// (Neovim 0.7) cannot tell an empty object from an empty list and send `[]`.
func decodeParams(raw *json.RawMessage, v any) error {
	if raw == nil {
		return nil
	}
	switch string(bytes.TrimSpace(*raw)) {
	case "null", "[]":
		return nil
	}
	if err := json.Unmarshal(*raw, v); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			field := typeErr.Field
			if field == "" {
				field = "params"
			}
			return invalidParams(field, fmt.Sprintf("expected %s, got JSON %s", typeErr.Type, typeErr.Value))
		}
		var synErr *json.SyntaxError
		if errors.As(err, &synErr) {
			return invalidParams("params", err.Error())
		}
		return invalidParams("params", err.Error())
	}
	return nil
}

// vaultPath resolves a path parameter inside the vault; a path that cannot
// name a note (empty, a NUL byte) is invalid params naming field, one that
// leads out of the vault stays an outside-vault error.
func vaultPath(v *vault.Vault, field, p string) (string, error) {
	rel, err := v.Path(p)
	if errors.Is(err, edit.ErrInvalidPath) {
		return "", invalidParams(field, err.Error())
	}
	return rel, err
}

// toRPCError maps an error from anywhere below to the code a client can act on.
func toRPCError(ctx context.Context, err error) *jsonrpc2.Error {
	var (
		rpcErr   *jsonrpc2.Error
		paramErr *paramError
		undoErr  *history.ConflictError
	)
	switch {
	case errors.As(err, &rpcErr):
		return rpcErr
	case ctx.Err() != nil && errors.Is(err, context.Canceled):
		return &jsonrpc2.Error{Code: codeRequestCancelled, Message: "request cancelled"}
	case errors.As(err, &paramErr):
		return &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidParams, Message: paramErr.Error()}
	case errors.Is(err, edit.ErrInvalidPath):
		return &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidParams, Message: "invalid params: " + err.Error()}
	case errors.Is(err, edit.ErrOutsideVault):
		return &jsonrpc2.Error{Code: CodeOutsideVault, Message: err.Error()}
	case errors.As(err, &undoErr):
		e := &jsonrpc2.Error{Code: CodeConflict, Message: err.Error()}
		e.SetError(undoErr)
		return e
	case errors.Is(err, changes.ErrNotApplied), errors.Is(err, changes.ErrDecided), errors.Is(err, history.ErrItemWrite):
		return &jsonrpc2.Error{Code: CodeRefused, Message: err.Error()}
	case errors.Is(err, edit.ErrConflict), errors.Is(err, edit.ErrEditorRefused):
		return &jsonrpc2.Error{Code: CodeConflict, Message: err.Error()}
	case errors.Is(err, edit.ErrStale):
		return &jsonrpc2.Error{Code: CodeStale, Message: err.Error()}
	case errors.Is(err, changes.ErrUnreadable):
		return &jsonrpc2.Error{Code: CodeInvalidNote, Message: err.Error()}
	case errors.Is(err, vault.ErrNotFound):
		return &jsonrpc2.Error{Code: CodeNotFound, Message: err.Error()}
	case errors.Is(err, errNoVault):
		return &jsonrpc2.Error{Code: CodeNoVault, Message: err.Error()}
	case isStorageError(err):
		return &jsonrpc2.Error{Code: CodeStorage, Message: "cannot write to the vault or margin's state: " + err.Error()}
	}
	return &jsonrpc2.Error{Code: jsonrpc2.CodeInternalError, Message: err.Error()}
}

var errNoVault = errors.New("no vault is open: initialize with rootUri, rootPath or initializationOptions.vault, or start margin with --vault")

// isStorageError reports whether err says the disk cannot take a write:
// it is full, over quota or the file size limit, read-only, or the files
// are not writable for margin, whether a file write or SQLite said so.
func isStorageError(err error) bool {
	for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EDQUOT, syscall.EFBIG, syscall.EROFS, syscall.EACCES, syscall.EPERM} {
		if errors.Is(err, errno) {
			return true
		}
	}
	var sqlErr *sqlite.Error
	if errors.As(err, &sqlErr) {
		switch sqlErr.Code() & 0xff { // the primary result code
		case sqlite3.SQLITE_FULL, sqlite3.SQLITE_READONLY:
			return true
		}
	}
	return false
}
