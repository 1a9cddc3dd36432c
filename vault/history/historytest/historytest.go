// Package historytest helps the tests of the packages that write through
// a vault's edit.Root see those writes in margin's history.
package historytest

import (
	"context"
	"database/sql"
	"testing"

	"github.com/margin-md/margin/vault/edit"
	"github.com/margin-md/margin/vault/history"
)

// Record opens the history of the vault whose state database is db and
// whose writes go through root, and records those writes in it until the
// test ends, as margin's workspace does.
func Record(t testing.TB, db *sql.DB, root *edit.Root, opts history.Options) *history.History {
	t.Helper()
	h, err := history.Open(context.Background(), db, root, opts)
	if err != nil {
		t.Fatal(err)
	}
	root.SetRecorder(h)
	t.Cleanup(func() { root.SetRecorder(nil); h.Close() })
	return h
}
