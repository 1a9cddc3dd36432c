package server

import (
	"context"
	"errors"
	"testing"

	"github.com/margin-md/margin/vault/edit"
)

// TestEditorRefusesStaleVersion: an edit made from a buffer the person has
// typed into since is refused before it reaches the client (the line edit
// would be cut against the newer text), and one of a closed note says so
// with edit.ErrNotOpen, so that edit.Change makes it again.
func TestEditorRefusesStaleVersion(t *testing.T) {
	s := &Server{} // no connection: reaching the client would panic
	s.docs.set(document{URI: "file:///v/Tasks/Ship.md", Path: "Tasks/Ship.md", Version: 5, Text: "# Ship\ntyping\n"})
	var ed edit.Editor = editor{s}
	applied, err := ed.ApplyEdit(context.Background(), "Tasks/Ship.md", 4, "# Ship\n- margin\n")
	if applied || err != nil {
		t.Errorf("stale version: ApplyEdit = %v, %v; want refused", applied, err)
	}
	if _, err := ed.ApplyEdit(context.Background(), "Tasks/Gone.md", 1, "x"); !errors.Is(err, edit.ErrNotOpen) {
		t.Errorf("closed note: %v, want edit.ErrNotOpen", err)
	}
}
