package vectors

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"
)

// wordEmbedder embeds a text as the sum of one pseudo-random vector per
// word, so texts that share words are near each other, deterministically.
// It counts what it is asked, and fail, unless nil, may fail or hold a
// call.
type wordEmbedder struct {
	dims int
	fp   string
	max  int
	fail func(ctx context.Context, call int, texts []string) error

	mu    sync.Mutex // guards the fields below
	calls int
	texts []string
}

func newWordEmbedder(fp string) *wordEmbedder { return &wordEmbedder{dims: 64, fp: fp, max: 200} }

func (e *wordEmbedder) Fingerprint() string { return e.fp }
func (e *wordEmbedder) MaxTokens() int      { return e.max }

func (e *wordEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	e.mu.Lock()
	e.calls++
	call := e.calls
	e.mu.Unlock()
	if e.fail != nil {
		if err := e.fail(ctx, call, texts); err != nil {
			return nil, err
		}
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = wordVector(t, e.dims)
	}
	e.mu.Lock()
	e.texts = append(e.texts, texts...)
	e.mu.Unlock()
	return out, nil
}

// embedded returns the texts embedded so far.
func (e *wordEmbedder) embedded() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.texts...)
}

func wordVector(text string, dims int) []float32 {
	v := make([]float32, dims)
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		h := fnv.New64a()
		h.Write([]byte(w))
		r := rand.New(rand.NewPCG(h.Sum64(), 7))
		for i := range v {
			v[i] += float32(r.NormFloat64())
		}
	}
	return v
}

// memSource is a Source over notes held in memory.
type memSource struct {
	mu    sync.Mutex // guards notes
	notes map[string]memNote
}

type memNote struct {
	note  Note
	stamp NoteStamp
}

func newMemSource() *memSource { return &memSource{notes: make(map[string]memNote)} }

// put stores a note of title with one section per body, each under the
// heading of the same position in headings ("" for the preamble).
func (m *memSource) put(path, title string, mtime time.Time, sections ...Section) {
	n := Note{Title: title, Sections: sections}
	sum := sha256.Sum256(fmt.Appendf(nil, "%#v", n))
	m.mu.Lock()
	m.notes[path] = memNote{n, NoteStamp{Path: path, Mtime: mtime, Version: hex.EncodeToString(sum[:])}}
	m.mu.Unlock()
}

func (m *memSource) remove(path string) {
	m.mu.Lock()
	delete(m.notes, path)
	m.mu.Unlock()
}

func (m *memSource) Notes(ctx context.Context) ([]NoteStamp, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []NoteStamp
	for _, n := range m.notes {
		out = append(out, n.stamp)
	}
	return out, nil
}

func (m *memSource) Note(ctx context.Context, path string) (Note, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.notes[path]
	if !ok {
		return Note{}, fmt.Errorf("%s: %w", path, ErrGone)
	}
	return n.note, nil
}

func sec(line int, text string, headings ...string) Section {
	return Section{Headings: headings, Line: line, Text: text}
}

var t0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

func openStore(t testing.TB, dir string) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// running is a queue run in the background, with its progress reports.
type running struct {
	q      *Queue
	cancel context.CancelFunc
	done   chan error
	ch     chan Progress
}

// start runs a queue over s, src and emb until the test ends or stop.
func start(t testing.TB, s *Store, src Source, emb Embedder, opt QueueOptions) *running {
	t.Helper()
	r := &running{done: make(chan error, 1), ch: make(chan Progress, 1024)}
	opt.OnProgress = func(p Progress) {
		select {
		case r.ch <- p:
		default: // a test that stopped listening
		}
	}
	r.q = NewQueue(s, src, emb, opt)
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- r.q.Run(ctx) }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

// stop cancels the queue and waits for Run to return; it returns Run's error.
func (r *running) stop(t testing.TB) error {
	r.cancel()
	select {
	case err, ok := <-r.done:
		if ok {
			close(r.done)
			return err
		}
		return nil
	case <-time.After(30 * time.Second):
		t.Fatal("queue did not stop")
		return nil
	}
}

// waitFor waits until the queue reports a progress for which cond holds,
// and returns it.
func (r *running) waitFor(t testing.TB, what string, cond func(Progress) bool) Progress {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case p := <-r.ch:
			if cond(p) {
				return p
			}
		case err := <-r.done:
			t.Fatalf("queue stopped (%v) before %s", err, what)
		case <-timeout:
			t.Fatalf("no progress %s after 30s; last %+v", what, r.q.Progress())
		}
	}
}

func (r *running) waitIdle(t testing.TB) Progress {
	t.Helper()
	return r.waitFor(t, "idle", func(p Progress) bool { return p.State == Idle })
}

var errOffline = errors.New("dial tcp 127.0.0.1:11434: connect: connection refused")
