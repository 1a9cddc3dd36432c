package vectors

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"
)

// bigVault is 40 notes of three chunks each, edited an hour apart.
func bigVault() *memSource {
	src := newMemSource()
	for i := range 40 {
		src.put(fmt.Sprintf("notes/%02d.md", i), fmt.Sprintf("Note %d", i), t0.Add(time.Duration(i)*time.Hour),
			sec(1, fmt.Sprintf("Preamble %d about apples.", i)),
			sec(3, fmt.Sprintf("Body %d about pears.", i), "Pears"),
			sec(6, fmt.Sprintf("Body %d about plums.", i), "Plums"))
	}
	return src
}

const killBatch = 8

// TestQueueKilledMidBatch runs the queue in a child process, kills it
// (SIGKILL, no chance to clean up) while its third batch is being
// embedded, and checks that a new queue finds every chunk of the first two
// batches stored, embeds the rest once each, and leaves a sound database.
func TestQueueKilledMidBatch(t *testing.T) {
	if dir := os.Getenv("MARGIN_VECTORS_KILL_DIR"); dir != "" {
		killedChild(t, dir)
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestQueueKilledMidBatch$", "-test.count=1")
	cmd.Env = append(os.Environ(), "MARGIN_VECTORS_KILL_DIR="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	for lines.Scan() && lines.Text() != "embedding batch 3" {
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	s := openStore(t, dir)
	defer s.Close()
	if err := s.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	p, err := s.Progress(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if p.Embedded != 2*killBatch || p.Left != 120-2*killBatch {
		t.Fatalf("after the kill: %d embedded, %d left; want the two batches before it kept", p.Embedded, p.Left)
	}
	checkTally(t, s, "after the kill")
	emb := newWordEmbedder("fake/words/64")
	r := start(t, s, bigVault(), emb, QueueOptions{Batch: killBatch})
	p = r.waitIdle(t)
	texts := emb.embedded()
	seen := make(map[string]bool)
	for _, tx := range texts {
		if seen[tx] {
			t.Errorf("%q embedded twice after the restart", tx)
		}
		seen[tx] = true
	}
	if len(texts) != 120-2*killBatch || p.Embedded != 120 || p.Left != 0 {
		t.Errorf("restart embedded %d texts, progress %+v; want %d, all 120 embedded", len(texts), p, 120-2*killBatch)
	}
	checkTally(t, s, "after the restart")
	var vectors, distinct int
	if err := s.db.QueryRow(`SELECT count(*), count(DISTINCT hash) FROM vectors`).Scan(&vectors, &distinct); err != nil || vectors != 120 || distinct != 120 {
		t.Errorf("%d vectors, %d distinct (%v); want 120 of each", vectors, distinct, err)
	}
	// The newest notes went first: the first two batches were the newest 16 chunks.
	ms, err := s.Nearest(context.Background(), wordVector("Note 39 Preamble 39 about apples", 64), 1, nil)
	if err != nil || len(ms) != 1 || ms[0].Path != "notes/39.md" {
		t.Errorf("Nearest = %+v, %v; want notes/39.md", ms, err)
	}
}

// killedChild is the child's side: a queue whose embedder announces each
// batch and never returns the third.
func killedChild(t *testing.T, dir string) {
	s := openStore(t, dir)
	emb := newWordEmbedder("fake/words/64")
	emb.fail = func(ctx context.Context, call int, _ []string) error {
		fmt.Printf("embedding batch %d\n", call)
		os.Stdout.Sync()
		if call == 3 {
			select {} // until killed
		}
		return nil
	}
	q := NewQueue(s, bigVault(), emb, QueueOptions{Batch: killBatch})
	err := q.Run(context.Background())
	t.Fatalf("queue returned %v before the kill", err)
}
