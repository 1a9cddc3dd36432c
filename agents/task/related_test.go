package task

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/agents/query/querytest"
	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/history"
	"github.com/margin-md/margin/vault/history/historytest"
	"github.com/margin-md/margin/vault/related"
	"github.com/margin-md/margin/vault/vaulttest"
	"github.com/margin-md/margin/vault/vectors"
)

// gardenTask is a task on one of llmtest.Meanings' concepts, linking one
// note of it (Beds) and none of the others.
const (
	gardenTask    = "Tasks/Plant the beds.md"
	gardenTaskSrc = "---\ntype: task\nstatus: open\n---\n# Plant the beds\n\nGardening: plants and seeds for the garden.\n\n- [ ] Buy seeds\n\nSee [[Beds]].\n"
)

// gardenVault has three notes near the task and not linked (two named
// Seeds, so each is linked by its path; Garten by its name), the linked
// Beds, and notes of other meanings.
var gardenVault = map[string]string{
	gardenTask:         gardenTaskSrc,
	"Garden/Beds.md":   "# Beds\n\nThe garden beds and their plants.\n",
	"Notes/Seeds.md":   "# Seeds\n\nWhat to order.\n\n## Sowing\n\nSeeds and plants in the garden, sown in spring.\n",
	"Archive/Seeds.md": "# Seeds\n\nOld garden seeds list.\n",
	"Notes/Garten.md":  "# Garten\n\nGarten und jardin: gardening.\n",
	"Notes/Money.md":   "# Budget\n\nExpenses and spending this month.\n",
	"Notes/Sleep.md":   "# Sleep\n\nSlept badly; a nap helps.\n",
	// margin's own file, nearest of all, and no note of the person's.
	"Margin/Reports/Garden plan.md": "# Garden plan\n\nGarden, gardening, plants, seeds.\n",
}

// ollamaEmbedder embeds chunks through the fake Ollama's /api/embed, as
// the workspace's Embedder does (without its title slot, which the fake
// ignores).
type ollamaEmbedder struct{ c *llm.Client }

func (e ollamaEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out, err := e.c.Embed(ctx, llm.EmbedRequest{Texts: texts, Kind: llm.EmbedDocument})
	return out.Vectors, err
}

func (e ollamaEmbedder) Fingerprint() string {
	m, _ := e.c.EmbedModel()
	return m.Fingerprint()
}

func (e ollamaEmbedder) MaxTokens() int {
	m, _ := e.c.EmbedModel()
	return m.MaxTokens
}

// nearNotes is the workspace's RelatedNow over a vectors store: vault/
// related's rule, and none while nothing is embedded.
type nearNotes struct {
	v  *vault.Vault
	vs *vectors.Store
}

func (n nearNotes) RelatedNow(ctx context.Context, path string, limit int) ([]related.Note, error) {
	notes, err := related.Find(ctx, n.v.Index(), n.vs, path, limit)
	if errors.Is(err, vectors.ErrNoVectors) || errors.Is(err, vectors.ErrNotFound) {
		return nil, nil
	}
	return notes, err
}

// relatedRig runs the agent of gardenTask over gardenVault, with the
// fake Ollama as chat and embedding model and the vault's writes in
// margin's history.
type relatedRig struct {
	v       *vault.Vault
	fake    *llmtest.Ollama
	rt      *Runtime
	h       *history.History
	id      string
	vs      *vectors.Store
	emb     ollamaEmbedder
	minutes atomic.Int64
}

// newRelatedRig opens the rig; embedded embeds every note first, else
// the vectors store stays empty; without vectors no Related is handed in.
func newRelatedRig(t *testing.T, vectorsToo, embedded bool) *relatedRig {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "vault")
	for p, s := range gardenVault {
		vaulttest.Write(t, dir, p, s)
	}
	r := &relatedRig{v: querytest.IndexedVault(t, dir), fake: llmtest.NewOllama(t, "qwen2.5:7b", "embeddinggemma")}
	r.h = historytest.Record(t, r.v.DB(), r.v.Root(), history.Options{Git: "-"})
	cfg := r.fake.Config()
	cfg.Retry.LLMRetry = 0
	client, err := llm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.emb = ollamaEmbedder{client}
	ctx := context.Background()
	var rel Related
	if vectorsToo {
		if r.vs, err = vectors.Open(ctx, filepath.Join(t.TempDir(), vectors.FileName)); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.vs.Close() })
		rel = nearNotes{r.v, r.vs}
		if embedded {
			r.embed(t)
		}
	}
	opts := Options{MaxTurns: chaosMaxTurns, Now: func() time.Time { return querytest.Now.Add(time.Duration(r.minutes.Load()) * time.Minute) }}
	if r.rt, err = newRuntimeWith(ctx, r.v, rel, client, opts); err != nil {
		t.Fatal(err)
	}
	a, err := r.rt.store.createAgent(ctx, gardenTask, "", querytest.Now)
	if err != nil {
		t.Fatal(err)
	}
	r.id = a.ID
	return r
}

// embed runs the embedding queue until nothing is left.
func (r *relatedRig) embed(t *testing.T) {
	t.Helper()
	idle := make(chan struct{})
	var once atomic.Bool
	q := vectors.NewQueue(r.vs, vectors.FromIndex(r.v.Index()), r.emb, vectors.QueueOptions{OnProgress: func(p vectors.Progress) {
		if p.State == vectors.Idle && p.Left == 0 && once.CompareAndSwap(false, true) {
			close(idle)
		}
	}})
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- q.Run(ctx) }()
	select {
	case <-idle:
	case <-time.After(time.Minute): // only ends a hang
		t.Fatal("the queue never went idle")
	}
	stop()
	<-done
}

// wake runs a wake the person asked for, a minute after the last.
func (r *relatedRig) wake(t *testing.T) (Run, llmtest.OllamaRequest) {
	t.Helper()
	r.minutes.Add(1)
	before := len(r.fake.Requests())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // only to catch a hang
	defer cancel()
	if _, err := r.rt.runWake(ctx, r.id, wakeRequest{reason: "test", force: true}); err != nil {
		t.Fatalf("wake: %v", err)
	}
	act, err := r.rt.store.Activity(context.Background(), r.id, 1)
	if err != nil || len(act.Runs) == 0 {
		t.Fatalf("activity %+v, %v", act, err)
	}
	reqs := r.fake.Requests()
	if len(reqs) == before {
		t.Fatalf("the wake made no model request (run %+v)", act.Runs[0])
	}
	return act.Runs[0], reqs[before]
}

func promptOf(req llmtest.OllamaRequest) string {
	for _, m := range req.Messages {
		if m.Role == "user" {
			return m.Content
		}
	}
	return ""
}

func offers(req llmtest.OllamaRequest, tool string) bool {
	for _, t := range req.Tools {
		if t.Function.Name == tool {
			return true
		}
	}
	return false
}

func (r *relatedRig) task(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.v.Dir(), gardenTask))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// told is what the agent's wakes were told of its calls to tool.
func (r *relatedRig) told(t *testing.T, tool string) []string {
	t.Helper()
	act, err := r.rt.store.Activity(context.Background(), r.id, 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range act.Messages {
		if m.ToolName == tool {
			out = append(out, m.Content)
		}
	}
	return out
}

const relatedSection = "## Related Notes (by meaning, not linked)"

// A wake over a vault with vectors shows the notes near its task that it
// does not link, each with its nearest section; the model proposes links
// to two of them, each its own item with a checkbox in the set's file; the
// person previews and approves both, which lands both under one Related
// heading as Obsidian would write them; undo gives the note back byte for
// byte, and each decision is the add_link tool's, like any other.
func TestWakeProposesLinksToRelatedNotes(t *testing.T) {
	r := newRelatedRig(t, true, true)
	ctx := context.Background()
	r.fake.Script(llmtest.Reply{ToolCalls: []llmtest.ToolCall{
		call("link_related_notes", map[string]any{"notes": []map[string]any{{"path": "Notes/Seeds.md"}, {"path": "Notes/Garten.md"}}, "human_summary": "both are about the beds"}),
		report("Beds to plant; seeds to buy.", "## Status\n- seeds to buy\n"),
	}})
	run, req := r.wake(t)
	if run.Status != RunCompleted {
		t.Fatalf("run %+v", run)
	}
	prompt := promptOf(req)
	for _, want := range []string{relatedSection, "[data: related note Notes/Seeds.md, section Seeds > Sowing]", "Seeds and plants in the garden, sown in spring.",
		"[data: related note Archive/Seeds.md, section Seeds]", "[data: related note Notes/Garten.md, section Garten]"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("the prompt lacks %q:\n%s", want, prompt)
		}
	}
	for _, unwanted := range []string{"related note Garden/Beds.md", "related note Margin/", "related note Notes/Money.md", "related note Notes/Sleep.md"} {
		if strings.Contains(prompt, unwanted) {
			t.Errorf("the prompt shows %q: linked, margin's own, or past the three nearest", unwanted)
		}
	}
	if !offers(req, "link_related_notes") {
		t.Error("link_related_notes not offered on a wake that showed related notes")
	}

	sets, err := r.rt.changes.Store().ChangeSets(ctx, changes.ChangeSetFilter{Task: gardenTask})
	if err != nil || len(sets) != 1 || len(sets[0].Items) != 2 {
		t.Fatalf("change sets %+v, %v; want one of two items", sets, err)
	}
	cs := sets[0]
	file, err := os.ReadFile(filepath.Join(r.v.Dir(), cs.Path))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"- [ ] Link [[Notes/Seeds]] under Related (because: both are about the beds) ^c1", "- [ ] Link [[Garten]] under Related (because: both are about the beds) ^c2"} {
		if cs.Items[i].Tool != "add_link" || !strings.Contains(string(file), want+"\n") {
			t.Errorf("item %d is %s; the set's file lacks %q:\n%s", i+1, cs.Items[i].Tool, want, file)
		}
	}

	before := r.task(t)
	p, err := r.rt.changes.Preview(ctx, cs.ID, "c2")
	if err != nil {
		t.Fatal(err)
	}
	if want := before + "\n## Related\n- [[Garten]]\n"; string(p.After) != want || p.Stale {
		t.Errorf("preview of c2:\n%s\nwant:\n%s", p.After, want)
	}
	if r.task(t) != before {
		t.Error("the preview wrote the task")
	}
	got, err := r.rt.changes.Decide(ctx, cs.ID, []changes.ItemDecision{{Item: "c1", Verdict: changes.Confirmed}, {Item: "c2", Verdict: changes.Confirmed}})
	if err != nil || got.Items[0].Status != changes.ItemConfirmed || got.Items[1].Status != changes.ItemConfirmed {
		t.Fatalf("confirming both: %+v, %v", got.Items, err)
	}
	if after, want := r.task(t), before+"\n## Related\n- [[Notes/Seeds]]\n- [[Garten]]\n"; after != want {
		t.Errorf("the task after both:\n%s\nwant:\n%s", after, want)
	}
	ds, err := r.rt.changes.Store().Decisions(ctx, changes.DecisionFilter{Agent: r.id})
	if err != nil || len(ds) != 2 || ds[0].Tool != "add_link" || ds[1].Tool != "add_link" {
		t.Errorf("decisions %+v, %v; want two of add_link", ds, err)
	}

	undone, err := r.rt.changes.Undo(ctx, r.h, cs.ID, nil)
	if err != nil || undone.Items[0].Status != changes.ItemUndone || undone.Items[1].Status != changes.ItemUndone {
		t.Fatalf("undo: %+v, %v", undone.Items, err)
	}
	if after := r.task(t); after != before {
		t.Errorf("the task after undo:\n%q\nwant byte for byte:\n%q", after, before)
	}
}

// An incremental wake shows the related notes only when they changed
// since the agent's last wake, and offers the link tool only then.
func TestIncrementalWakeShowsRelatedNotesWhenTheyChange(t *testing.T) {
	r := newRelatedRig(t, true, true)
	r.fake.Handle(func(llmtest.OllamaRequest) llmtest.Reply {
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{goodReport}}
	})
	if run, req := r.wake(t); !run.FullContext || !strings.Contains(promptOf(req), relatedSection) {
		t.Fatalf("first wake (full %v) shows no related notes", run.FullContext)
	}
	run, req := r.wake(t)
	if run.FullContext || strings.Contains(promptOf(req), relatedSection) || offers(req, "link_related_notes") {
		t.Errorf("an incremental wake with the same related notes (full %v) shows them again or offers the link tool:\n%s", run.FullContext, promptOf(req))
	}
	// A note nearer than the others: the set changes.
	vaulttest.Write(t, r.v.Dir(), "Notes/Jardin.md", "# Jardin\n\nJardin, jardinage, garden, plants.\n")
	if _, err := r.v.Scan(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	r.embed(t)
	_, req = r.wake(t)
	if p := promptOf(req); !strings.Contains(p, "related note Notes/Jardin.md") || !offers(req, "link_related_notes") {
		t.Errorf("an incremental wake after the related notes changed does not show them or offer the tool:\n%s", p)
	}
}

// Without vectors (none handed in, or none embedded yet) a wake shows no
// related notes and does not offer the link tool; a model that calls it
// anyway is told why, and nothing is proposed.
func TestNoVectorsNoRelatedNotes(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		vectorsToo, embedded bool
	}{{"no vectors", false, false}, {"nothing embedded", true, false}} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRelatedRig(t, tc.vectorsToo, tc.embedded)
			r.fake.Script(llmtest.Reply{ToolCalls: []llmtest.ToolCall{
				call("link_related_notes", map[string]any{"notes": []map[string]any{{"path": "Notes/Garten.md"}}}), goodReport,
			}})
			run, req := r.wake(t)
			if strings.Contains(promptOf(req), relatedSection) || offers(req, "link_related_notes") {
				t.Errorf("related notes shown or the link tool offered:\n%s", promptOf(req))
			}
			if run.Status != RunCompleted {
				t.Errorf("run %+v", run)
			}
			if told := r.told(t, "link_related_notes"); len(told) == 0 || !strings.Contains(told[0], "showed no related notes") {
				t.Errorf("the model was told %q", told)
			}
			if sets, err := r.rt.changes.Store().ChangeSets(context.Background(), changes.ChangeSetFilter{Task: gardenTask}); err != nil || len(sets) != 0 {
				t.Errorf("change sets %+v, %v", sets, err)
			}
		})
	}
}

// A weak model's link_related_notes (llmtest.Weak) never reaches the
// person: a path the wake did not show, filler or an empty path is
// refused and the model told; the task note is as it was.
func TestWeakModelLinksNothing(t *testing.T) {
	for _, fault := range llmtest.Faults {
		t.Run(string(fault), func(t *testing.T) {
			t.Parallel()
			r := newRelatedRig(t, true, true)
			r.fake.Handle(llmtest.Weak{Fault: fault, Tool: "link_related_notes"}.Ollama)
			r.wake(t)
			if got := r.task(t); got != gardenTaskSrc {
				t.Errorf("the task changed:\n%s", got)
			}
			if sets, err := r.rt.changes.Store().ChangeSets(context.Background(), changes.ChangeSetFilter{Task: gardenTask}); err != nil || len(sets) != 0 {
				t.Errorf("change sets %+v, %v: want none from junk", sets, err)
			}
			told := r.told(t, "link_related_notes")
			switch {
			case fault == llmtest.Cut:
				// The call came as text: no call, nothing to tell.
			case len(told) != 1 || !strings.HasPrefix(told[0], "error: "):
				t.Errorf("the model was told %q, want its call refused", told)
			case fault == llmtest.Filler || fault == llmtest.MissingPaths:
				if !strings.Contains(told[0], "not among the related notes this wake showed") {
					t.Errorf("the model was told %q, want the notes it may link", told)
				}
			}
		})
	}
}

// The related notes' cost in prompt tokens: the wake's message as the
// fake counts it (characters / 4, tools not counted), and the link tool's
// schema, which a wake that shows notes offers besides. A full wake pays
// for the section, within relatedTokens and its heading; an incremental
// wake whose related notes did not change pays nothing.
// go test -run TestRelatedNotesCostPerWake -v ./agents/task/
func TestRelatedNotesCostPerWake(t *testing.T) {
	cost := func(vectorsToo bool) (full, incremental int) {
		r := newRelatedRig(t, vectorsToo, vectorsToo)
		r.fake.Handle(func(llmtest.OllamaRequest) llmtest.Reply {
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{goodReport}}
		})
		first, _ := r.wake(t)
		next, _ := r.wake(t)
		if !first.FullContext || next.FullContext {
			t.Fatalf("full %v then %v, want a full wake then an incremental one", first.FullContext, next.FullContext)
		}
		return first.PromptTokens, next.PromptTokens
	}
	fullBefore, incBefore := cost(false)
	fullAfter, incAfter := cost(true)
	var linkTool changes.DeferredTool
	for _, d := range changes.DeferredTools() {
		if d.Name == "link_related_notes" {
			linkTool = d
		}
	}
	schema, _ := linkTool.Schema.MarshalJSON()
	toolTokens := estimateTokens(linkTool.Description + string(schema))
	t.Logf("message tokens per wake, without related notes → with: full %d → %d (+%d; the notes at most %d), incremental %d → %d (+%d); the link tool's schema ≈ %d tokens on a wake that shows notes",
		fullBefore, fullAfter, fullAfter-fullBefore, relatedTokens, incBefore, incAfter, incAfter-incBefore, toolTokens)
	if most := relatedTokens + 80; fullAfter <= fullBefore || fullAfter-fullBefore > most {
		t.Errorf("a full wake pays %d tokens for its related notes, want some and at most %d", fullAfter-fullBefore, most)
	}
	if incAfter != incBefore {
		t.Errorf("an incremental wake with the same related notes pays %d tokens for them, want none", incAfter-incBefore)
	}
}
