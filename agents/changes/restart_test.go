package changes

import (
	"context"
	"strings"
	"testing"
	"time"
)

// A box ticked in a change set file while margin was not running (the
// person approved in Obsidian with margin off) is read when margin runs
// again: the watcher never saw that save.
func TestTickMadeWhileMarginWasOffIsRead(t *testing.T) {
	c, dir, _ := clientRig(t)
	cs, err := c.ProposeEdit(t.Context(), "Cursor", EditArgs{Path: "Notes/Ideas.md", Kind: EditReplace, OldText: "- two", Text: "- 2", Reason: "digits"})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, cs.Path, strings.Replace(readFile(t, dir, cs.Path), "- [ ] Replace", "- [x] Replace", 1))

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(30 * time.Second) // only to end a hang
	for readFile(t, dir, "Notes/Ideas.md") != "# Ideas\n\n- one\n- 2\n" {
		if time.Now().After(deadline) {
			t.Fatalf("the tick saved while margin was off was never read; the note:\n%s", readFile(t, dir, "Notes/Ideas.md"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
