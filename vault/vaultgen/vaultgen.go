// Package vaultgen writes synthetic Obsidian-style vaults for benchmarks and
// soak tests: daily logs with timed entries (training, sleep, food, work on
// linked tasks), task notes with checklists and Obsidian Tasks fields, and
// nested reference notes with wikilinks, aliases and tags, in roughly the
// proportions of a real vault, plus a few notes with broken frontmatter and a
// few non-markdown files that an indexer must report rather than choke on.
//
// Output depends only on Options: the same options give a byte-identical
// vault. The package writes files and nothing else; it does not know margin's
// parser or index, so it describes what it wrote in Stats instead.
package vaultgen

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
)

// Options says what vault to write.
type Options struct {
	// Notes is the number of markdown notes to write: about 60% daily notes,
	// 10% task notes and 30% other notes (a few of them with broken
	// frontmatter). It must be positive.
	Notes int
	// Seed selects the vault; the same Options give a byte-identical vault.
	Seed int64
	// Start is the date of the first daily note. When zero, the daily log
	// ends on DefaultEnd and reaches back as far as Notes requires.
	Start time.Time
}

// DefaultEnd is the last daily note's date when Options.Start is zero. It is
// the end of the sample vault in testdata/vault, so both read as "recent".
var DefaultEnd = time.Date(2026, time.November, 21, 0, 0, 0, 0, time.UTC)

// Stats describes a generated vault.
type Stats struct {
	Notes       int // markdown notes: Daily + Tasks + Other
	Daily       int
	Tasks       int
	Other       int      // reference and inbox notes, Broken included
	Broken      []string // vault-relative paths of the notes whose frontmatter is deliberately invalid YAML
	NonNotes    int      // non-markdown files (images, PDFs, canvases), not counted in Notes
	Entries     int      // `## HH:MM` entries in daily notes, corrections included
	Corrections int      // `## HH:MM [correction]` entries
	Linked      int      // daily entries that link a task
	Links       int      // wikilinks, embeds and markdown links to vault files
	Bytes       int64    // bytes written, .obsidian included
	FirstDay    string   // first daily note, YYYY-MM-DD
	LastDay     string   // last daily note, YYYY-MM-DD
}

const (
	dailyFolder = "Daily"
	dateLayout  = "2006-01-02"
)

// Generate writes a vault of opts.Notes notes into dir, which must be empty
// or not exist yet.
func Generate(dir string, opts Options) (Stats, error) {
	if opts.Notes <= 0 {
		return Stats{}, fmt.Errorf("vaultgen: notes must be positive, got %d", opts.Notes)
	}
	if err := prepareDir(dir); err != nil {
		return Stats{}, err
	}
	p := newPlan(opts)
	for _, d := range p.dirs() {
		if err := os.MkdirAll(filepath.Join(dir, filepath.FromSlash(d)), 0o755); err != nil {
			return Stats{}, fmt.Errorf("vaultgen: creating folder: %w", err)
		}
	}
	cfg := []byte(`{"folder": "` + dailyFolder + `", "format": "YYYY-MM-DD"}` + "\n")
	if err := os.WriteFile(filepath.Join(dir, ".obsidian", "daily-notes.json"), cfg, 0o644); err != nil {
		return Stats{}, fmt.Errorf("vaultgen: writing daily notes config: %w", err)
	}

	// Every file is rendered from the plan and its own random stream, so the
	// workers can run in any order and the vault stays the same.
	workers := runtime.GOMAXPROCS(0)
	parts := make([]Stats, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < p.files(); i += workers {
				rel, data := p.render(i, &parts[w])
				if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(rel)), data, 0o644); err != nil {
					errs[w] = fmt.Errorf("vaultgen: writing %s: %w", rel, err)
					return
				}
				parts[w].Bytes += int64(len(data))
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return Stats{}, err
	}

	st := Stats{
		Daily:    len(p.days),
		Tasks:    len(p.tasks),
		Other:    len(p.others),
		NonNotes: len(p.attachments),
		Bytes:    int64(len(cfg)),
		FirstDay: p.days[0].Format(dateLayout),
		LastDay:  p.days[len(p.days)-1].Format(dateLayout),
	}
	st.Notes = st.Daily + st.Tasks + st.Other
	for _, o := range p.others {
		if o.broken {
			st.Broken = append(st.Broken, o.path)
		}
	}
	for _, s := range parts {
		st.Entries += s.Entries
		st.Corrections += s.Corrections
		st.Linked += s.Linked
		st.Links += s.Links
		st.Bytes += s.Bytes
	}
	return st, nil
}

func prepareDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("vaultgen: creating %s: %w", dir, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("vaultgen: reading %s: %w", dir, err)
	case len(entries) > 0:
		return fmt.Errorf("vaultgen: %s is not empty; refusing to write a vault over existing files", dir)
	}
	return nil
}

// plan is everything decided before any file is written: dates, titles,
// paths, which tasks are active on which day. Rendering a file reads the plan
// and draws only from that file's own random stream.
type plan struct {
	seed        uint64
	days        []time.Time
	tasks       []taskPlan
	others      []otherPlan
	attachments []string
	active      [][]int32 // task indexes active on days[i]
	training    []int     // indexes into others of training notes (for links from workouts)
	people      []int     // indexes into others of people notes
}

type taskPlan struct {
	title   string
	path    string
	aliases []string
	first   int // index into days where work on the task starts
	last    int // and ends
	hot     bool
	status  string
}

type otherPlan struct {
	title   string
	path    string
	aliases []string
	area    int // index into referenceAreas
	broken  bool
}

func (p *plan) files() int { return len(p.days) + len(p.tasks) + len(p.others) + len(p.attachments) }

// render returns the vault-relative path and content of file i, adding what it
// wrote to st.
func (p *plan) render(i int, st *Stats) (string, []byte) {
	// Stream numbers keep each file's randomness independent of the others.
	w := newWriter(p.seed, uint64(i)+1)
	switch {
	case i < len(p.days):
		p.renderDaily(w, i, st)
		return dailyFolder + "/" + p.days[i].Format(dateLayout) + ".md", w.bytes()
	case i < len(p.days)+len(p.tasks):
		i -= len(p.days)
		p.renderTask(w, i, st)
		return p.tasks[i].path, w.bytes()
	case i < len(p.days)+len(p.tasks)+len(p.others):
		i -= len(p.days) + len(p.tasks)
		p.renderOther(w, i, st)
		return p.others[i].path, w.bytes()
	default:
		i -= len(p.days) + len(p.tasks) + len(p.others)
		return p.attachments[i], attachmentBytes(p.attachments[i])
	}
}

func (p *plan) dirs() []string {
	set := map[string]bool{".obsidian": true, dailyFolder: true}
	for _, t := range p.tasks {
		set[path.Dir(t.path)] = true
	}
	for _, o := range p.others {
		set[path.Dir(o.path)] = true
	}
	for _, a := range p.attachments {
		set[path.Dir(a)] = true
	}
	dirs := make([]string, 0, len(set))
	for d := range set {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	return dirs
}

func newPlan(opts Options) *plan {
	p := &plan{seed: uint64(opts.Seed)}
	r := rand.New(rand.NewPCG(p.seed, 0))

	nDaily := max(1, opts.Notes*60/100)
	nTasks := opts.Notes * 10 / 100
	nOther := opts.Notes - nDaily - nTasks
	if nOther < 0 {
		nDaily, nOther = opts.Notes, 0
	}
	nBroken := 0
	if nOther > 0 {
		nBroken = max(1, opts.Notes/500)
	}

	p.days = planDays(r, nDaily, opts.Start)
	taken := map[string]bool{}
	for _, d := range p.days {
		taken[strings.ToLower(d.Format(dateLayout))] = true
	}
	aliasTaken := map[string]bool{}
	p.planTasks(r, nTasks, taken, aliasTaken)
	p.planOthers(r, nOther, nBroken, taken, aliasTaken)

	nAttach := max(1, opts.Notes/100)
	seen := map[string]bool{}
	for len(p.attachments) < nAttach {
		d := p.days[r.IntN(len(p.days))]
		stamp := d.Format("20060102") + fmt.Sprintf("%02d%02d%02d", r.IntN(24), r.IntN(60), r.IntN(60))
		var name string
		switch r.IntN(6) {
		case 0:
			name = "Attachments/" + d.Format("2006") + "/scan " + d.Format(dateLayout) + fmt.Sprintf(" %d.pdf", r.IntN(100))
		case 1:
			name = "Canvases/" + title(topicNouns[r.IntN(len(topicNouns))]) + " map.canvas"
		default:
			name = "Attachments/" + d.Format("2006") + "/Pasted image " + stamp + ".png"
		}
		if !seen[name] {
			seen[name] = true
			p.attachments = append(p.attachments, name)
		}
	}
	return p
}

// planDays picks n dates, skipping about one day in six and now and then a
// week or two (holidays, illness), as a person keeping a log does.
func planDays(r *rand.Rand, n int, start time.Time) []time.Time {
	var steps []int
	for range n - 1 {
		step := 1
		for r.Float64() < 0.17 {
			step++
		}
		if r.Float64() < 0.004 {
			step += 5 + r.IntN(10)
		}
		steps = append(steps, step)
	}
	days := make([]time.Time, n)
	if start.IsZero() {
		days[n-1] = DefaultEnd
		for i := n - 2; i >= 0; i-- {
			days[i] = days[i+1].AddDate(0, 0, -steps[i])
		}
		return days
	}
	days[0] = time.Date(start.Year(), start.Month(), start.Day(), 0, 0, 0, 0, time.UTC)
	for i := 1; i < n; i++ {
		days[i] = days[i-1].AddDate(0, 0, steps[i-1])
	}
	return days
}

// unique returns name, or name followed by " 2", " 3", ... if it is taken
// (case-insensitively, as Obsidian resolves names), and marks it taken.
func unique(name string, taken map[string]bool) string {
	n := name
	for k := 2; taken[strings.ToLower(n)]; k++ {
		n = fmt.Sprintf("%s %d", name, k)
	}
	taken[strings.ToLower(n)] = true
	return n
}

func (p *plan) planTasks(r *rand.Rand, n int, taken, aliasTaken map[string]bool) {
	last := len(p.days) - 1
	p.active = make([][]int32, len(p.days))
	for i := range n {
		t := taskPlan{hot: r.Float64() < 0.05}
		kind := taskKinds[r.IntN(len(taskKinds))]
		obj := kind.objects[r.IntN(len(kind.objects))]
		t.title = kind.verbs[r.IntN(len(kind.verbs))] + " " + obj
		if r.Float64() < 0.3 {
			t.title += " " + taskQualifiers[r.IntN(len(taskQualifiers))]
		}
		t.title = unique(t.title, taken)
		if r.Float64() < 0.15 && !aliasTaken[obj] {
			aliasTaken[obj] = true
			t.aliases = []string{obj}
		}

		// Hot tasks run for months and are mentioned most working days, like
		// the one big project of a quarter.
		span := 3 + r.IntN(25)
		if t.hot {
			span = 30 + r.IntN(90)
		}
		t.first = r.IntN(len(p.days))
		t.last = min(last, t.first+span)
		age := last - t.last
		switch {
		case age > 20 && r.Float64() < 0.85:
			t.status = "done"
		case age > 20 && r.Float64() < 0.5:
			t.status = "cancelled"
		default:
			t.status = []string{"open", "in-progress", "in-progress", "blocked"}[r.IntN(4)]
		}
		if t.status == "done" || t.status == "cancelled" {
			t.path = "Tasks/Archive/" + p.days[t.last].Format("2006") + "/" + t.title + ".md"
		} else {
			t.path = "Tasks/" + t.title + ".md"
		}
		for d := t.first; d <= t.last; d++ {
			p.active[d] = append(p.active[d], int32(i))
		}
		p.tasks = append(p.tasks, t)
	}
}

func (p *plan) planOthers(r *rand.Rand, n, broken int, taken, aliasTaken map[string]bool) {
	for i := range n {
		o := otherPlan{area: r.IntN(len(referenceAreas)), broken: i < broken}
		a := referenceAreas[o.area]
		folder := a.folder
		if sub := a.subs[r.IntN(len(a.subs))]; sub != "" {
			folder += "/" + sub
		}
		var name, alias string
		switch {
		case o.broken:
			folder = "Inbox"
			name = title(topicNouns[r.IntN(len(topicNouns))]) + " " + []string{"ideas", "scratch", "notes", "draft"}[r.IntN(4)]
		case strings.HasSuffix(a.folder, "People"):
			first, lastName := firstNames[r.IntN(len(firstNames))], lastNames[r.IntN(len(lastNames))]
			name = first + " " + lastName
			alias = first + " " + lastName[:1] + "."
		case strings.HasSuffix(a.folder, "Books"):
			pat := bookPatterns[r.IntN(len(bookPatterns))]
			args := []any{title(topicNouns[r.IntN(len(topicNouns))])}
			if strings.Count(pat, "%s") == 2 {
				args = []any{title(adjectives[r.IntN(len(adjectives))]), title(topicNouns[r.IntN(len(topicNouns))])}
			}
			name = fmt.Sprintf(pat, args...)
		case strings.HasSuffix(a.folder, "Places"):
			name = rareTerm(r.IntN(27000)) + " " + []string{"Park", "Café", "Gym", "Market", "Station", "Beach", "Trail"}[r.IntN(7)]
		case strings.HasSuffix(a.folder, "Projects"):
			name = "Project " + rareTerm(r.IntN(27000))
			alias = strings.ToLower(name[len("Project "):])
		case strings.HasSuffix(a.folder, "Meetings"):
			d := p.days[r.IntN(len(p.days))].Format(dateLayout)
			name = []string{"1-1 with ", "Retro ", "Planning "}[r.IntN(3)]
			if strings.HasPrefix(name, "1-1") {
				name += firstNames[r.IntN(len(firstNames))] + " " + d
			} else {
				name += d
			}
		default:
			name = title(adjectives[r.IntN(len(adjectives))]) + " " + topicNouns[r.IntN(len(topicNouns))]
			if r.Float64() < 0.5 {
				name = title(topicNouns[r.IntN(len(topicNouns))]) + " " + []string{"notes", "log", "checklist", "thoughts", "setup", "basics"}[r.IntN(6)]
			}
		}
		o.title = unique(name, taken)
		o.path = folder + "/" + o.title + ".md"
		if alias != "" && !aliasTaken[strings.ToLower(alias)] && r.Float64() < 0.7 {
			aliasTaken[strings.ToLower(alias)] = true
			o.aliases = []string{alias}
		}
		if strings.HasPrefix(a.folder, "Reference/Training") {
			p.training = append(p.training, i)
		}
		if strings.HasSuffix(a.folder, "People") && !o.broken {
			p.people = append(p.people, i)
		}
		p.others = append(p.others, o)
	}
}

// attachmentBytes returns a small file of the right kind for name: a valid
// 1x1 PNG, a minimal PDF header, or an empty Obsidian canvas.
func attachmentBytes(name string) []byte {
	switch path.Ext(name) {
	case ".png":
		return []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89" +
			"\x00\x00\x00\rIDATx\x9cc\xf8\xff\xff?\x00\x05\xfe\x02\xfe\xa75\x81\x84\x00\x00\x00\x00IEND\xaeB`\x82")
	case ".pdf":
		return []byte("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n")
	default:
		return []byte(`{"nodes":[],"edges":[]}` + "\n")
	}
}
