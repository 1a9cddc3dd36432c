package index

import (
	"context"
	"testing"
	"time"

	"github.com/margin-md/margin/vault/note"
)

// A search whose statements are not prepared yet runs them in its own
// transaction: preparing on another connection of the pool while holding
// the read lock waited for a committing writer, which waited for that lock
// (SQLITE_BUSY after the busy timeout). With the pool cut to the writer's
// connection and the search's, a prepare on a third cannot happen at all.
func TestSearchPreparesNothingBesideItsTransaction(t *testing.T) {
	ix, _ := openIndex(t)
	apply(t, ix, fixture{path: "a.md", kind: note.KindNote, content: "# Plumbing\n\nCall the plumber about the leak.\n"}.update())
	ix.db.SetMaxOpenConns(2) // the index keeps one for its writer
	for _, q := range []Query{
		{Text: "plumber"},
		{Text: "how do I fix the leak with the plumber?"},
		{Text: "c++ plumber"},
		{Text: "plumber", Glob: "*.md"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		r, err := ix.Find(ctx, q)
		cancel()
		if err != nil {
			t.Fatalf("%+v: %v", q, err)
		}
		if q.Text != "c++ plumber" && len(r.Hits) != 1 {
			t.Errorf("%+v: hits %v, want a.md", q, hitKeys(r.Hits))
		}
		// The second run uses the statements prepared after the first.
		if _, err := ix.Find(context.Background(), q); err != nil {
			t.Fatalf("%+v again: %v", q, err)
		}
	}
}
