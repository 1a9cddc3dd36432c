package index

import (
	"context"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/margin-md/margin/vault/note"
)

var (
	atxRE   = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*$`)
	entryRE = regexp.MustCompile(`^(\d{2}:\d{2})( \[correction\])?$`)
	wikiRE  = regexp.MustCompile(`\[\[([^\]|#^]*)(?:#([^\]|^]*))?(?:\^[^\]|]*)?(?:\|[^\]]*)?\]\]`)
	dayRE   = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
)

// fakeParse builds what the index reads from a note.Note out of markdown
// without frontmatter: ATX headings, `## HH:MM` entries of daily notes and
// [[wikilinks]]. It stands in for note.Parse so these tests do not depend on
// the parser; tests set task fields, tags and aliases by hand.
func fakeParse(p string, kind note.Kind, content string) *note.Note {
	stem := strings.TrimSuffix(path.Base(p), ".md")
	n := &note.Note{Path: p, Kind: kind, Title: stem, BodyLine: 1}
	if kind == note.KindDaily && dayRE.MatchString(stem) {
		n.Date = stem
	}
	off := 0
	for i, line := range strings.SplitAfter(content, "\n") {
		text := strings.TrimRight(line, "\n")
		if m := atxRE.FindStringSubmatch(text); m != nil {
			h := note.Heading{Level: len(m[1]), Text: m[2], Line: i + 1, Offset: off}
			n.Headings = append(n.Headings, h)
			if len(n.Entries) > 0 && h.Level <= 2 && n.Entries[len(n.Entries)-1].End == len(content) {
				n.Entries[len(n.Entries)-1].End = off
			}
			if e := entryRE.FindStringSubmatch(h.Text); e != nil && kind == note.KindDaily && h.Level == 2 {
				n.Entries = append(n.Entries, note.Entry{Time: e[1], Correction: e[2] != "", Heading: h.Text,
					Line: h.Line, Start: off, End: len(content)})
			}
		}
		for _, m := range wikiRE.FindAllStringSubmatchIndex(text, -1) {
			l := note.Link{Target: text[m[2]:m[3]], Offset: off + m[0], End: off + m[1], Line: i + 1}
			if m[4] >= 0 {
				l.Heading = text[m[4]:m[5]]
			}
			n.Links = append(n.Links, l)
		}
		off += len(line)
	}
	for i := range n.Entries {
		e := &n.Entries[i]
		body := content[e.Start:e.End]
		if nl := strings.IndexByte(body, '\n'); nl >= 0 {
			e.Text = strings.TrimSpace(body[nl+1:])
		}
		for _, l := range n.Links {
			if l.Offset >= e.Start && l.Offset < e.End {
				e.Links = append(e.Links, l)
			}
		}
	}
	return n
}

// fixture is a note as a test writes it: markdown plus the fields fakeParse
// does not derive.
type fixture struct {
	path    string
	kind    note.Kind
	content string
	tags    []string
	aliases []string
	task    *note.Task
	check   []note.ChecklistItem
}

func (f fixture) update() Update {
	n := fakeParse(f.path, f.kind, f.content)
	n.Tags, n.Aliases, n.Task, n.Checklist = f.tags, f.aliases, f.task, f.check
	return Update{Path: f.path, Note: n, Content: []byte(f.content),
		Stat: FileStat{Size: int64(len(f.content)), MtimeNS: 1, Hash: "h:" + f.path}}
}

// openIndex opens an index in a fresh database under t.TempDir and
// returns it with the database path.
func openIndex(t testing.TB) (*Index, string) {
	t.Helper()
	dbPath := filepath.Join(t.TempDir(), ".margin", "index.db")
	return reopen(t, dbPath), dbPath
}

func reopen(t testing.TB, dbPath string) *Index {
	t.Helper()
	ix, err := Open(context.Background(), dbPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix
}

func apply(t testing.TB, ix *Index, us ...Update) {
	t.Helper()
	if err := ix.Apply(context.Background(), us); err != nil {
		t.Fatal(err)
	}
}
