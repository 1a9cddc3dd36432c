package vault

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/margin-md/margin/vault/edit"
	"github.com/margin-md/margin/vault/index"
	"github.com/margin-md/margin/vault/note"
	"golang.org/x/sync/semaphore"
)

// ScanResult counts what a scan did. Skipped and Failed are the state the
// index holds after the scan, unread files included, so a rescan reports
// what the first scan and status report.
type ScanResult struct {
	Files     int           `json:"files"`     // files seen
	Unchanged int           `json:"unchanged"` // same size and mtime as indexed: not read
	Updated   int           `json:"updated"`   // read and (re)indexed
	Touched   int           `json:"touched"`   // read, same content: only the stat refreshed
	Removed   int           `json:"removed"`   // indexed but gone
	Skipped   int           `json:"skipped"`
	Failed    int           `json:"failed"`
	Duration  time.Duration `json:"duration"`
}

// Change is one note whose content changed, as subscribers see it.
type Change struct {
	Path string
	Kind note.Kind
	// Old and New fingerprint the content before and after; the zero value
	// means the file did not exist.
	Old, New edit.Fingerprint
	// Own is true when the new content is what margin itself wrote.
	Own bool
}

// Removed reports whether the note is gone.
func (c Change) Removed() bool { return c.New.IsZero() }

// scanBatch is how many parsed notes go to the index in one transaction.
// A cold scan holds about four batches (one being filled, one queued, one
// being written, the search text of one more in the scratch build), and
// the heap grows to twice that: at 500 the Go heap peaked at 33-36 MB on
// the 10k vault and the help vault's cold index at 104 MiB RSS; 250 takes
// 9 and 16 MiB off at the same speed; 125 takes as much again but is 6%
// slower, the commits of more transactions.
const scanBatch = 250

// firstBatch is the size of a scan's first batch.
const firstBatch = 32

// scanBytes bounds the file content a scan holds at once, read but not yet
// written to the index (each note is held twice, as read and as parsed,
// and the heap grows to twice what it holds before a collection): 500
// notes of a few KB are far below it, two notes of 4 MiB reach it, and
// then reading waits for the writer.
const scanBytes = 8 << 20

// Scan walks the whole vault and brings the index in line with it. Files
// whose size and mtime match the index are not read; files whose content
// hash matches are not parsed again. progress, when set, is called as files
// are done.
func (v *Vault) Scan(ctx context.Context, progress func(done, total int)) (ScanResult, error) {
	start := time.Now()
	// What the index holds is read while the vault is walked: on a warm
	// 10k vault each took a fifth of a scan.
	type stats struct {
		known map[string]index.FileStat
		err   error
	}
	indexed := make(chan stats, 1)
	go func() {
		known, err := v.index.Stat(ctx)
		indexed <- stats{known, err}
	}()
	files, werr := v.walk()
	st := <-indexed
	if werr != nil {
		return ScanResult{}, werr
	}
	if st.err != nil {
		return ScanResult{}, fmt.Errorf("reading index state: %w", st.err)
	}
	known := st.known
	// Notes classified under other rules (another daily format, task or
	// templates folder) are all read and parsed again.
	rules := v.rules.Fingerprint()
	was, err := v.index.Rules(ctx)
	if err != nil {
		return ScanResult{}, err
	}
	reclassify := was != rules && len(known) > 0
	if reclassify {
		// known keeps what the index held, for the changes subscribers hear.
		if err := v.index.Reset(ctx); err != nil {
			return ScanResult{}, err
		}
	}

	// A file the index knows is read only when its stat changed; one it
	// does not know is read whatever its stat says, and examine stats it
	// then (a cold index saves a system call a file).
	var same []bool
	if !reclassify {
		same = sameStat(files, known)
	}
	res := ScanResult{Files: len(files)}
	var paths []string
	seen := make(map[string]bool, len(known))
	for i, f := range files {
		seen[f.rel] = true
		if same == nil || !same[i] {
			paths = append(paths, f.rel)
			continue
		}
		res.Unchanged++
		switch known[f.rel].State {
		case index.StateSkipped:
			res.Skipped++
		case index.StateFailed:
			res.Failed++
		}
	}

	var removed []index.Update
	for p := range known {
		if !seen[p] {
			removed = append(removed, index.Update{Path: p, Remove: true})
		}
	}
	res.Removed = len(removed)

	changes, counts, err := v.examineAll(ctx, paths, known, reclassify, func(done int) {
		if progress != nil {
			progress(res.Unchanged+done, res.Files)
		}
	})
	if err != nil {
		return res, err
	}
	if err := v.index.Apply(ctx, removed); err != nil {
		return res, fmt.Errorf("removing deleted notes from the index: %w", err)
	}
	for _, u := range removed {
		changes = append(changes, Change{Path: u.Path, Old: edit.Fingerprint(known[u.Path].Hash)})
	}
	if was != rules {
		if err := v.index.SetRules(ctx, rules); err != nil {
			return res, err
		}
	}
	res.Updated, res.Touched = counts.updated, counts.touched
	res.Skipped += counts.skipped
	res.Failed += counts.failed
	res.Duration = time.Since(start)

	v.mu.Lock()
	v.lastScan = res
	v.mu.Unlock()
	v.publish(changes)
	return res, nil
}

// walked is a content file found by walk.
type walked struct {
	rel string
	d   fs.DirEntry
}

// walk lists the vault's content files in walk order (lexical, which
// keeps a folder's notes, daily notes by date, together in the index).
func (v *Vault) walk() ([]walked, error) {
	var files []walked
	err := filepath.WalkDir(v.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == v.dir {
				return err
			}
			// A folder we cannot list: its files stay as indexed until it
			// is readable again; say so rather than drop them.
			v.logger.Warn("cannot read folder", "path", p, "err", err)
			return fs.SkipDir
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, v.dir+string(filepath.Separator)))
		if p == v.dir {
			return nil
		}
		if d.IsDir() {
			if v.ignore(rel, true) {
				return fs.SkipDir
			}
			return nil
		}
		if edit.IsTempName(d.Name()) {
			v.removeStaleTemp(rel)
			return nil
		}
		if v.isContent(rel) {
			files = append(files, walked{rel, d})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("walking %s: %w", v.dir, err)
	}
	return files, nil
}

// sameStat reports, by position, the files the index holds with the size
// and mtime they have now: those are not read again. It stats them on
// every core (a stat is a system call, most of a warm scan); a file it
// cannot stat is not the same, and examine says why.
func sameStat(files []walked, known map[string]index.FileStat) []bool {
	same := make([]bool, len(files))
	if len(known) == 0 {
		return same
	}
	const chunk = 256
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), (len(files)+chunk-1)/chunk) {
		wg.Go(func() {
			for {
				from := int(next.Add(chunk)) - chunk
				if from >= len(files) {
					return
				}
				for i := from; i < min(from+chunk, len(files)); i++ {
					k, ok := known[files[i].rel]
					if !ok {
						continue
					}
					if info, err := files[i].d.Info(); err == nil {
						same[i] = k.Size == info.Size() && k.MtimeNS == info.ModTime().UnixNano()
					}
				}
			}
		})
	}
	wg.Wait()
	return same
}

type examineCounts struct{ updated, touched, skipped, failed int }

// examineAll reads, hashes and parses paths on all cores and writes the
// results to the index in batches, each in one transaction. With reparse,
// notes whose content is unchanged are parsed again too.
func (v *Vault) examineAll(ctx context.Context, paths []string, known map[string]index.FileStat, reparse bool, done func(int)) ([]Change, examineCounts, error) {
	var counts examineCounts
	if len(paths) == 0 {
		return nil, counts, nil
	}
	type result struct {
		update index.Update
		change *Change
		held   int64 // bytes of content held in the gate until written
	}
	gate := semaphore.NewWeighted(scanBytes)
	// One resolution of each folder for the whole pass, not one a file.
	rd := v.root.NewReader()
	defer rd.Close()
	jobs := make(chan string)
	results := make(chan result, 64)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range jobs {
				var held int64
				reserve := func(size int64) error {
					// At most half the gate, as a batch is written once it
					// holds half: a big note never waits on a batch
					// that waits for more notes.
					want := min(size, scanBytes/2)
					if err := gate.Acquire(ctx, want); err != nil {
						return err
					}
					held = want
					return nil
				}
				u, c := v.examineFrom(rd, p, known[p], reparse, reserve)
				results <- result{u, c, held}
			}
		}()
	}
	go func() {
		defer close(jobs)
		for _, p := range paths {
			select {
			case jobs <- p:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() {
		wg.Wait()
		close(results)
	}()

	// Writing is serial (one SQLite writer) and slower than parsing, so a
	// writer goroutine commits one batch while the next is being parsed.
	type batch struct {
		updates []index.Update
		held    int64
	}
	batches := make(chan batch, 1)
	written := make(chan error, 1)
	go func() {
		var (
			err     error
			applied int
			bulk    *index.Bulk
		)
		if len(known) == 0 || reparse {
			// A first index, or one emptied for new rules: build the search
			// table on the other core.
			if bulk, err = v.index.BeginBulk(ctx); err != nil {
				v.logger.Warn("indexing without a parallel search build", "err", err)
				err = nil
			}
		}
		for b := range batches {
			if err == nil {
				err = v.index.Apply(ctx, b.updates)
			}
			gate.Release(b.held)
			applied += len(b.updates)
			done(applied)
		}
		if bulk != nil {
			err = errors.Join(err, bulk.Finish(ctx))
		}
		written <- err
	}()

	var (
		changes []Change
		next    = batch{updates: make([]index.Update, 0, scanBatch)}
		// The first batch is small: the scratch search build of a first
		// index waits for it, and on a vault of long notes is the slowest
		// stage throughout.
		size = firstBatch
	)
	for r := range results {
		if r.change != nil {
			changes = append(changes, *r.change)
		}
		switch {
		case r.update.TouchOnly:
			counts.touched++
		case r.update.Remove:
		case r.update.State == index.StateSkipped:
			counts.skipped++
		case r.update.State == index.StateFailed:
			counts.failed++
		default:
			counts.updated++
		}
		next.updates = append(next.updates, r.update)
		next.held += r.held
		if len(next.updates) >= size || next.held >= scanBytes/2 {
			batches <- next
			next, size = batch{updates: make([]index.Update, 0, scanBatch)}, scanBatch
		}
	}
	if len(next.updates) > 0 {
		batches <- next
	}
	close(batches)
	werr := <-written
	if err := ctx.Err(); err != nil {
		return nil, counts, err
	}
	if werr != nil {
		return nil, counts, fmt.Errorf("writing the index: %w", werr)
	}
	return changes, counts, nil
}

// examine turns one file into an index update and, when its content
// changed, a Change for subscribers.
func (v *Vault) examine(rel string, was index.FileStat) (index.Update, *Change) {
	return v.examineFrom(v.root, rel, was, false, nil)
}

// opener is *edit.Root or *edit.Reader.
type opener interface {
	OpenRead(name string) (*os.File, error)
}

// With reparse, a note whose content is unchanged is parsed again (the
// rules changed) but no Change is told: subscribers read the new kinds
// from the index when they start. reserve, when set, is called with the
// file's size before it is read and may refuse (the scan was cancelled).
func (v *Vault) examineFrom(o opener, rel string, was index.FileStat, reparse bool, reserve func(size int64) error) (index.Update, *Change) {
	old := edit.Fingerprint(was.Hash)
	// One handle for the stat and the read: resolving the path inside the
	// vault is a system call per folder. Should the open fail, Stat says why
	// (and gives the stat to record with a file that cannot be read).
	f, err := o.OpenRead(rel)
	var info fs.FileInfo
	if err == nil {
		defer f.Close()
		info, err = f.Stat()
	} else if !errors.Is(err, os.ErrNotExist) {
		openErr := err
		if info, err = v.root.Stat(rel); err == nil {
			err = openErr
		}
	}
	if errors.Is(err, os.ErrNotExist) {
		if was.Hash == "" && was.State == "" {
			return index.Update{Path: rel, Remove: true}, nil
		}
		return index.Update{Path: rel, Remove: true}, &Change{Path: rel, Old: old}
	}
	if info == nil {
		return index.Update{Path: rel, State: index.StateFailed, Reason: err.Error()}, nil
	}
	stat := index.FileStat{Size: info.Size(), MtimeNS: info.ModTime().UnixNano()}
	if !info.Mode().IsRegular() {
		return index.Update{Path: rel, Stat: stat, State: index.StateSkipped, Reason: "not a regular file"}, nil
	}
	if !isMarkdown(rel) {
		return index.Update{Path: rel, Stat: stat, State: index.StateSkipped, Reason: "not markdown"}, nil
	}
	if isDrawing(rel) {
		return index.Update{Path: rel, Stat: stat, State: index.StateSkipped, Reason: drawingReason}, nil
	}
	if info.Size() > v.opts.MaxFileSize {
		return index.Update{Path: rel, Stat: stat, State: index.StateSkipped,
			Reason: fmt.Sprintf("over the size cap (%d bytes > %d): indexed by name only", info.Size(), v.opts.MaxFileSize)}, nil
	}
	if err != nil {
		return index.Update{Path: rel, Stat: stat, State: index.StateFailed, Reason: err.Error()}, nil
	}
	if reserve != nil {
		if err := reserve(info.Size()); err != nil {
			return index.Update{Path: rel, Stat: stat, State: index.StateFailed, Reason: err.Error()}, nil
		}
	}
	data, err := readAll(f, info.Size())
	if err != nil {
		return index.Update{Path: rel, Stat: stat, State: index.StateFailed, Reason: err.Error()}, nil
	}
	fp := edit.FingerprintOf(data)
	stat.Hash = string(fp)
	if bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0 {
		return index.Update{Path: rel, Stat: stat, State: index.StateSkipped, Reason: "binary content"}, nil
	}
	same := was.Hash == stat.Hash && was.State != ""
	if same && !reparse && was.State == index.StateIndexed {
		// Touched, not changed: refresh the stat so the next scan skips it.
		return index.Update{Path: rel, Stat: stat, State: index.StateIndexed, TouchOnly: true}, nil
	}
	n := note.Parse(rel, data, v.parse)
	if _, ok := n.Frontmatter.Get("excalidraw-plugin"); ok {
		return index.Update{Path: rel, Stat: stat, State: index.StateSkipped, Reason: drawingReason}, nil
	}
	u := index.Update{Path: rel, Stat: stat, Note: n, Content: data, State: index.StateIndexed}
	var why []string
	// A template's placeholders ({{date}}, <% … %>) are not YAML, and
	// need not be: it is indexed for search without its properties.
	if n.FrontmatterError != "" && n.Kind != note.KindTemplate {
		why = append(why, "broken frontmatter: "+n.FrontmatterError)
	}
	if n.Plain != "" {
		why = append(why, "indexed as plain text, too costly to parse: "+n.Plain)
	}
	if len(why) > 0 {
		u.State, u.Reason = index.StateFailed, strings.Join(why, "; ")
	}
	if same && reparse {
		return u, nil
	}
	return u, &Change{Path: rel, Kind: n.Kind, Old: old, New: fp, Own: v.root.IsOwnWrite(rel, fp)}
}

// readAll reads f to the end into a buffer of its expected size.
func readAll(f *os.File, size int64) ([]byte, error) {
	data := make([]byte, 0, size+1) // +1: reaching EOF needs no second buffer
	for {
		n, err := f.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err == io.EOF {
			return data, nil
		}
		if err != nil {
			return nil, err
		}
		if len(data) == cap(data) { // the file grew
			data = append(data, 0)[:len(data)]
		}
	}
}

// isContent reports whether a file belongs to the vault's content, which
// the index accounts for (indexed, skipped or failed). Editor swap files,
// margin's temp files and files excluded from the vault do not; the
// scan and the watcher's batches must agree on this.
func (v *Vault) isContent(rel string) bool {
	return !isEditorTemp(rel) && !v.excluded(rel, false)
}

// Excalidraw keeps each drawing in a markdown file of its own, mostly
// compressed JSON, named *.excalidraw.md and marked by its
// excalidraw-plugin property: the plugin's file, not a note.
const drawingReason = "an Excalidraw drawing: the Excalidraw plugin's file, not a note"

func isDrawing(rel string) bool {
	return strings.HasSuffix(strings.ToLower(rel), ".excalidraw.md")
}

func isMarkdown(rel string) bool {
	ext := strings.ToLower(filepath.Ext(rel))
	return ext == ".md" || ext == ".markdown"
}

// isEditorTemp matches the files editors write beside the note they save.
func isEditorTemp(rel string) bool {
	base := rel[strings.LastIndexByte(rel, '/')+1:]
	return base == "4913" || strings.HasSuffix(base, "~") || strings.HasPrefix(base, ".#") ||
		strings.HasSuffix(base, ".swp") || strings.HasSuffix(base, ".swx") || edit.IsTempName(base)
}
