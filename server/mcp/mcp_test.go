package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/agents/ledger"
	"github.com/margin-md/margin/agents/query"
	"github.com/margin-md/margin/agents/query/querytest"
	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/llm/llmtest"
	mcpserver "github.com/margin-md/margin/server/mcp"
	"github.com/margin-md/margin/server/workspace"
	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/history"
	"github.com/margin-md/margin/vault/index"
)

// rig is margin's MCP server on a copy of the sample vault, and a client
// connected to it through the SDK's in-memory transport.
type rig struct {
	dir string
	ws  *workspace.Workspace
	s   *mcpserver.Server
	cs  *sdk.ClientSession
}

// sampleVault is a copy of the sample vault (testdata/vault).
func sampleVault(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(t.TempDir(), "vault")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(filepath.Dir(file), "..", "..", "testdata", "vault"))); err != nil {
		t.Fatal(err)
	}
	return dir
}

func newRig(t *testing.T, client *llm.Client) *rig {
	t.Helper()
	dir := sampleVault(t)
	return newRigAt(t, dir, client)
}

func newRigAt(t *testing.T, dir string, client *llm.Client) *rig {
	t.Helper()
	return newRigWith(t, dir, client, mcpserver.Options{Version: "test"})
}

func newRigWith(t *testing.T, dir string, client *llm.Client, opts mcpserver.Options) *rig {
	t.Helper()
	ctx := context.Background()
	o := workspace.Options{Parts: workspace.Changes | workspace.Query | workspace.Reviews, Scan: true, Ledger: &ledger.Slot{}, LLM: client,
		Query: query.Options{Now: func() time.Time { return querytest.Now }, LoopMax: 2}}
	o.Vault.Dir = dir
	ws, err := workspace.Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	s, err := mcpserver.New(ctx, ws, opts)
	if err != nil {
		t.Fatal(err)
	}
	st, ct := sdk.NewInMemoryTransports()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(runCtx, st) }()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "Test Client", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		stop()
		<-done
		ws.Close()
	})
	return &rig{dir: dir, ws: ws, s: s, cs: cs}
}

func (r *rig) call(t *testing.T, name string, args any) *sdk.CallToolResult {
	t.Helper()
	res, err := r.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

func text(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func structured[T any](t *testing.T, res *sdk.CallToolResult) T {
	t.Helper()
	var v T
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
	return v
}

func (r *rig) read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.dir, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The tools of SPEC §10, with schemas from Go types and readOnlyHint on
// exactly the ones that write nothing.
func TestToolsAndAnnotations(t *testing.T) {
	r := newRig(t, nil)
	res, err := r.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	readOnly := map[string]bool{}
	for _, tool := range res.Tools {
		readOnly[tool.Name] = tool.Annotations != nil && tool.Annotations.ReadOnlyHint
		if tool.InputSchema == nil || tool.OutputSchema == nil {
			t.Errorf("%s: input schema %v, output schema %v", tool.Name, tool.InputSchema, tool.OutputSchema)
		}
	}
	want := map[string]bool{"search_notes": true, "read_note": true, "related_notes": true, "list_tasks": true, "get_report": true, "get_review": true, "ask": true,
		"list_changes": true, "log_entry": false, "propose_edit": false, "propose_task_change": false}
	if len(readOnly) != len(want) {
		t.Errorf("tools %v, want %v", readOnly, want)
	}
	for name, ro := range want {
		if got, ok := readOnly[name]; !ok || got != ro {
			t.Errorf("%s: present %v, readOnlyHint %v; want readOnlyHint %v", name, ok, got, ro)
		}
	}
	i := slices.IndexFunc(res.Tools, func(t *sdk.Tool) bool { return t.Name == "propose_edit" })
	b, _ := json.Marshal(res.Tools[i].InputSchema)
	if !strings.Contains(string(b), `"enum":["create","append","replace"]`) || !strings.Contains(string(b), `"required":["path","kind","text","reason"]`) {
		t.Errorf("propose_edit schema: %s", b)
	}
}

// The closed sets a client picks from are the agents' own: the fields a
// task change may set and the statuses a task may have come from the
// deferred tools' table, as the task agent's set_task_status does.
func TestEnumsComeFromTheDeferredTools(t *testing.T) {
	r := newRig(t, nil)
	res, err := r.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	enum := func(tool, prop string) []string {
		i := slices.IndexFunc(res.Tools, func(t *sdk.Tool) bool { return t.Name == tool })
		if i < 0 {
			t.Fatalf("no tool %s", tool)
		}
		b, _ := json.Marshal(res.Tools[i].InputSchema)
		var s struct {
			Properties map[string]struct{ Enum []string }
		}
		json.Unmarshal(b, &s)
		return s.Properties[prop].Enum
	}
	var agentStatuses []string
	for _, d := range changes.DeferredTools() {
		if d.Name == "set_task_status" {
			for _, v := range d.Schema.Properties["status"].Enum {
				agentStatuses = append(agentStatuses, v.(string))
			}
		}
	}
	for _, c := range []struct {
		tool, prop string
		want       []string
	}{
		{"propose_task_change", "field", changes.TaskFields()},
		{"list_tasks", "status", changes.TaskStatuses()},
		{"list_tasks", "status", agentStatuses},
	} {
		if got := enum(c.tool, c.prop); len(c.want) == 0 || !slices.Equal(got, c.want) {
			t.Errorf("%s %s enum %q, want %q", c.tool, c.prop, got, c.want)
		}
	}
}

// Reads: search, a note and one of its sections, tasks; and every way
// out of the vault refused with a tool error.
func TestReadsStayInTheVault(t *testing.T) {
	r := newRig(t, nil)
	hits := structured[struct {
		Hits  []struct{ Path string }
		Total int
	}](t, r.call(t, "search_notes", map[string]any{"query": "invoice export", "limit": 3}))
	if len(hits.Hits) == 0 || hits.Hits[0].Path != "Tasks/Ship invoice export.md" {
		t.Errorf("search: %+v", hits)
	}
	res := r.call(t, "read_note", map[string]any{"path": "Tasks/Ship invoice export.md", "heading": "Checklist"})
	note := structured[mcpserver.ReadResult](t, res)
	if res.IsError || note.Frontmatter["status"] != "in-progress" || !strings.HasPrefix(note.Content, "## Checklist") || strings.Contains(note.Content, "Acme's finance team") {
		t.Errorf("read_note section: %+v (%s)", note, text(res))
	}
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret.md"), []byte("secret"), 0o644)
	if err := os.Symlink(outside, filepath.Join(r.dir, "Reference", "out")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"../secret.md", filepath.Join(outside, "secret.md"), filepath.Join(r.dir, "Reference", "Acme.md"), "Reference/out/secret.md", "Reference/../../secret.md", ".margin/state.db"} {
		res := r.call(t, "read_note", map[string]any{"path": p})
		if !res.IsError || strings.Contains(text(res), "secret") && !strings.Contains(text(res), "secret.md") {
			t.Errorf("read_note %s: %s", p, text(res))
		}
	}
	if res := r.call(t, "read_note", map[string]any{"path": "Attachments/diagram.png"}); !res.IsError || !strings.Contains(text(res), "not a text note") {
		t.Errorf("read_note of a picture: %.200s", text(res))
	}
	tasks := structured[mcpserver.TasksResult](t, r.call(t, "list_tasks", map[string]any{"status": "blocked"}))
	if len(tasks.Tasks) != 1 || tasks.Tasks[0].Path != "Tasks/Fix flaky sync tests.md" {
		t.Errorf("blocked tasks: %+v", tasks)
	}
}

// TestSearchNotesQuestion: an AI application's question, as it would ask
// it, finds the note its words point to by default; mode all, which needs
// every word, finds none.
func TestSearchNotesQuestion(t *testing.T) {
	r := newRig(t, nil)
	type hits struct {
		Hits  []struct{ Path string }
		Total int
	}
	const question = "why do the sync tests fail on CI?"
	if all := structured[hits](t, r.call(t, "search_notes", map[string]any{"query": question, "mode": "all"})); all.Total != 0 {
		t.Fatalf("mode all: %+v; want nothing for this test to mean something", all)
	}
	for _, args := range []map[string]any{{"query": question}, {"query": question, "mode": "auto"}} {
		got := structured[hits](t, r.call(t, "search_notes", args))
		if len(got.Hits) == 0 || got.Hits[0].Path != "Tasks/Fix flaky sync tests.md" {
			t.Errorf("%v: %+v; want Tasks/Fix flaky sync tests.md first", args, got)
		}
	}
}

// A proposal changes nothing until a person approves it, by the path
// margin approve takes; the decision and every call are the client's in
// the ledger.
func TestProposalWaitsForApproval(t *testing.T) {
	r := newRig(t, nil)
	const p = "Reference/Acme.md"
	before := r.read(t, p)
	res := r.call(t, "propose_edit", map[string]any{"path": p, "kind": "append", "text": "- Prefers CSV exports", "reason": "said so on the call"})
	if res.IsError {
		t.Fatal(text(res))
	}
	prop := structured[mcpserver.ProposalResult](t, res)
	if r.read(t, p) != before {
		t.Fatal("the note changed before approval")
	}
	set := r.read(t, prop.File)
	if !strings.Contains(set, "Test Client proposed this over MCP") || !strings.Contains(set, "+- Prefers CSV exports") {
		t.Errorf("change set file:\n%s", set)
	}
	cs, err := r.ws.Changes.Decide(context.Background(), prop.ChangeSet, []changes.ItemDecision{{Item: prop.Item, Verdict: changes.Confirmed}})
	if err != nil || cs.Items[0].Status != changes.ItemConfirmed {
		t.Fatalf("approve: %+v, %v", cs, err)
	}
	if got := r.read(t, p); got != strings.TrimRight(before, "\n")+"\n- Prefers CSV exports\n" {
		t.Errorf("after approval:\n%s", got)
	}
	ds, err := r.ws.Changes.Store().Decisions(context.Background(), changes.DecisionFilter{Task: p})
	if err != nil || len(ds) != 1 || ds[0].Agent != "mcp:Test Client" {
		t.Errorf("decisions: %+v, %v", ds, err)
	}
	tc := r.call(t, "propose_task_change", map[string]any{"task": "Renew passport", "field": "status", "value": "in-progress", "reason": "booked the photo"})
	if tc.IsError || !strings.Contains(text(tc), "Set status to in-progress") {
		t.Errorf("propose_task_change: %s", text(tc))
	}
	sets := structured[mcpserver.ChangesResult](t, r.call(t, "list_changes", map[string]any{"status": "all"}))
	if len(sets.ChangeSets) != 2 {
		t.Errorf("list_changes: %+v", sets)
	}
	calls := r.calls(t, "list_changes")
	if len(calls) != 3 || slices.ContainsFunc(calls, func(c ledger.ToolCall) bool { return c.Client != "Test Client" }) {
		t.Errorf("ledger: %+v", calls)
	}
}

// calls are the tool calls in the ledger once the server has written the
// last one made, a call to last: the server queues calls in the order
// they return and writes them in that order, so every call before it,
// and any record a call should not have made, is in by then.
func (r *rig) calls(t *testing.T, last string) []ledger.ToolCall {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) { // the deadline only ends a hang
		calls, err := r.ws.Ledger.ToolCalls(context.Background(), 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(calls) > 0 && calls[0].Tool == last {
			return calls
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ledger never recorded the last call, to %s: %+v", last, calls)
		}
	}
}

// search_notes without a limit gives the 20 hits its schema promises,
// and its text is one line per hit a model can read, with the count and
// the cut said.
func TestSearchNotesDefaultLimitAndText(t *testing.T) {
	dir := t.TempDir()
	for i := range 25 {
		body := fmt.Sprintf("# Animal %d\n\nA quokka sighting, number %d.\n", i, i)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("Animal %02d.md", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := newRigAt(t, dir, nil)
	res := r.call(t, "search_notes", map[string]any{"query": "quokka"})
	got := structured[index.Result](t, res)
	if len(got.Hits) != 20 || got.Total != 25 || !got.Truncated {
		t.Fatalf("hits %d, total %d, truncated %v; want 20 of 25, cut", len(got.Hits), got.Total, got.Truncated)
	}
	txt := text(res)
	if !strings.HasPrefix(txt, "25 notes match; the best 20") {
		t.Errorf("text does not say the count and the cut:\n%s", txt)
	}
	for _, h := range got.Hits {
		if want := fmt.Sprintf("\n%s:%d", h.Path, h.Line); !strings.Contains(txt, want) || !strings.Contains(txt, "**quokka**") {
			t.Errorf("text lacks %q or the marked word:\n%s", want, txt)
		}
	}
	if res := r.call(t, "search_notes", map[string]any{"query": "wombat"}); text(res) != "No note matches." {
		t.Errorf("no match: %q", text(res))
	}
}

// Beside a process that watches the vault (margin serve), margin mcp
// walks it no more: the index follows the vault through that process's
// watcher. When that process stops, the walks resume.
func TestNoScansWhileAnotherProcessWatches(t *testing.T) {
	dir := sampleVault(t)
	const refresh = 20 * time.Millisecond
	r := newRigWith(t, dir, nil, mcpserver.Options{Refresh: refresh})
	<-r.s.Indexed()
	found := func(q string) bool {
		t.Helper()
		return structured[index.Result](t, r.call(t, "search_notes", map[string]any{"query": q})).Total > 0
	}

	// "serve": a vault of its own on the same folder, watching it.
	ctx, stop := context.WithCancel(context.Background())
	serve, err := vault.Open(ctx, vault.Options{Dir: dir, Debounce: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- serve.Run(ctx) }()
	stopServe := sync.OnceValue(func() error {
		stop()
		err := <-done
		serve.Close()
		return err
	})
	t.Cleanup(func() { stopServe() })
	for w := false; !w; time.Sleep(5 * time.Millisecond) {
		if w, err = serve.Watched(); err != nil {
			t.Fatal(err)
		}
	}
	found("passport")
	scanned := r.s.Scanned()
	if err := os.WriteFile(filepath.Join(dir, "Reference", "Animal.md"), []byte("# Animal\n\nA quokka.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !found("quokka") {
		if time.Now().After(deadline) {
			t.Fatal("the watching process's index never showed the new note")
		}
		time.Sleep(2 * refresh)
	}
	if got := r.s.Scanned(); !got.Equal(scanned) {
		t.Errorf("a scan began %v after the one before, while another process watched", got.Sub(scanned))
	}

	if err := stopServe(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "Reference", "Animal.md")); err != nil {
		t.Fatal(err)
	}
	for deadline = time.Now().Add(10 * time.Second); found("quokka"); time.Sleep(2 * refresh) {
		if time.Now().After(deadline) {
			t.Fatal("alone again, the index never lost the removed note: margin mcp did not walk the vault")
		}
	}
	if !r.s.Scanned().After(scanned) {
		t.Errorf("alone again, the removed note is gone from the index but no scan began after %v", scanned)
	}
}

// Alone, margin mcp reads an index no older than Options.Refresh: a note
// written, deleted or changed is searched as it is once that has passed,
// however many calls came between.
func TestIndexFollowsTheVault(t *testing.T) {
	dir := sampleVault(t)
	const refresh = 200 * time.Millisecond
	r := newRigWith(t, dir, nil, mcpserver.Options{Refresh: refresh})
	search := func(q string) []string {
		t.Helper()
		res := r.call(t, "search_notes", map[string]any{"query": q})
		var paths []string
		for _, h := range structured[index.Result](t, res).Hits {
			paths = append(paths, h.Path)
		}
		return paths
	}
	if got := search("quokka"); len(got) != 0 {
		t.Fatalf("quokka before the note: %v", got)
	}
	note := filepath.Join(dir, "Reference", "Animal.md")
	for i, step := range []struct {
		write func() error
		want  string
	}{
		{func() error { return os.WriteFile(note, []byte("# Animal\n\nA quokka smiles.\n"), 0o644) }, "Reference/Animal.md"},
		{func() error { return os.WriteFile(note, []byte("# Animal\n\nA wombat digs.\n"), 0o644) }, ""},
		{func() error { return os.WriteFile(note, []byte("# Animal\n\nA quokka again.\n"), 0o644) }, "Reference/Animal.md"},
		{func() error { return os.Remove(note) }, ""},
	} {
		if err := step.write(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(refresh)
		for time.Now().Before(deadline) { // calls within Refresh: no scan is owed yet
			search("quokka")
			time.Sleep(refresh / 10)
		}
		time.Sleep(refresh / 10)
		if got := strings.Join(search("quokka"), ","); got != step.want {
			t.Errorf("step %d: quokka finds %q, want %q", i, got, step.want)
		}
	}
}

// A first scan that fails (here the vault folder is away for a moment)
// is not the server's last word: the next tool that reads the index
// scans again.
func TestFailedFirstScanIsRetried(t *testing.T) {
	dir := sampleVault(t)
	ctx := context.Background()
	o := workspace.Options{Parts: workspace.Changes | workspace.Query | workspace.Reviews, Ledger: &ledger.Slot{}}
	o.Vault.Dir = dir
	ws, err := workspace.Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if err := os.Rename(dir, dir+".away"); err != nil {
		t.Fatal(err)
	}
	s, err := mcpserver.New(ctx, ws, mcpserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	<-s.Indexed()
	if err := os.Rename(dir+".away", dir); err != nil {
		t.Fatal(err)
	}
	st, ct := sdk.NewInMemoryTransports()
	ran := make(chan error, 1)
	go func() { ran <- s.Run(ctx, st) }()
	defer func() { <-ran }() // before the workspace closes
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "Test Client"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "search_notes", Arguments: map[string]any{"query": "invoice export"}})
	if err != nil || res.IsError || !strings.Contains(text(res), "Tasks/Ship invoice export.md") {
		t.Errorf("search after a failed first scan: %v %s", err, text(res))
	}
}

// margin mcp alone forgets the ledger's calls older than history.keep
// (90 days by default) once it has indexed the vault, as margin serve
// does, and keeps the newer ones.
func TestLedgerKept(t *testing.T) {
	dir := sampleVault(t)
	ctx := context.Background()
	o := workspace.Options{Ledger: &ledger.Slot{}}
	o.Vault.Dir = dir
	ws, err := workspace.Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	err = ws.Ledger.RecordToolCalls(ctx, []ledger.ToolCall{
		{Time: now.Add(-100 * 24 * time.Hour), Client: "Old Client", Tool: "search_notes"},
		{Time: now.Add(-80 * 24 * time.Hour), Client: "Recent Client", Tool: "search_notes"},
	})
	if err := errors.Join(err, ws.Close()); err != nil {
		t.Fatal(err)
	}
	r := newRigAt(t, dir, nil)
	var calls []ledger.ToolCall
	for range 500 {
		if calls, err = r.ws.Ledger.ToolCalls(ctx, 10); err != nil || len(calls) == 1 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(calls) != 1 || calls[0].Client != "Recent Client" {
		t.Errorf("calls left = %+v, %v", calls, err)
	}
}

// Resources: the global context and each report, as file:// URIs of
// their files, and nothing else.
func TestResources(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(file), "..", "..", "testdata", "vault")
	dir := filepath.Join(t.TempDir(), "vault")
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, "Margin", "Reports"), 0o755)
	os.WriteFile(filepath.Join(dir, "Margin", "Reports", "Renew passport.md"), []byte("---\nmargin: report\ntldr: Photos left.\n---\nPhotos left.\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "Margin", "Context.md"), []byte("# Context\n"), 0o644)
	r := newRigAt(t, dir, nil)
	ctx := context.Background()
	res, err := r.cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, x := range res.Resources {
		uris = append(uris, x.URI)
	}
	report := "file://" + filepath.ToSlash(filepath.Join(dir, "Margin", "Reports", "Renew passport.md"))
	report = strings.ReplaceAll(report, " ", "%20")
	if !slices.Contains(uris, report) || !slices.Contains(uris, "file://"+filepath.ToSlash(filepath.Join(dir, "Margin", "Context.md"))) {
		t.Errorf("resources %v", uris)
	}
	got, err := r.cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: report})
	if err != nil || len(got.Contents) != 1 || !strings.Contains(got.Contents[0].Text, "tldr: Photos left.") {
		t.Errorf("read %s: %+v, %v", report, got, err)
	}
	for _, uri := range []string{"file://" + filepath.ToSlash(filepath.Join(dir, "Reference", "Acme.md")), "file:///etc/passwd",
		"file://" + filepath.ToSlash(filepath.Join(dir, "Margin", "Reports", "..", "..", "..", "secret.md"))} {
		if _, err := r.cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri}); err == nil {
			t.Errorf("read %s: no error", uri)
		}
	}
}

// The reports listed as resources are those inside the vault: a reports
// folder linked out of the vault, a report linked out of it and an
// editor's lock link to nothing are not listed, so no name from outside
// the vault shows and every report listed can be read.
func TestResourcesStayInsideTheVault(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "Secret plan.md"), []byte("# Secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	reports := func(t *testing.T, dir string) []string {
		t.Helper()
		r := newRigAt(t, dir, nil)
		res, err := r.cs.ListResources(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, x := range res.Resources {
			if name, ok := strings.CutPrefix(x.Name, "report: "); ok {
				names = append(names, name)
				if _, err := r.cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: x.URI}); err != nil {
					t.Errorf("read %s: %v", x.URI, err)
				}
			}
		}
		return names
	}
	t.Run("a folder linked out", func(t *testing.T) {
		dir := sampleVault(t)
		os.MkdirAll(filepath.Join(dir, "Margin"), 0o755)
		if err := os.Symlink(outside, filepath.Join(dir, "Margin", "Reports")); err != nil {
			t.Fatal(err)
		}
		if got := reports(t, dir); len(got) != 0 {
			t.Errorf("reports %q, want none", got)
		}
	})
	t.Run("reports linked out and to nothing", func(t *testing.T) {
		dir := sampleVault(t)
		folder := filepath.Join(dir, "Margin", "Reports")
		os.MkdirAll(folder, 0o755)
		if err := os.WriteFile(filepath.Join(folder, "Renew passport.md"), []byte("---\nmargin: report\n---\nPhotos left.\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(outside, "Secret plan.md"), filepath.Join(folder, "Secret plan.md")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("user@host.1234", filepath.Join(folder, ".#Renew passport.md")); err != nil {
			t.Fatal(err)
		}
		if got := reports(t, dir); !slices.Equal(got, []string{"Renew passport"}) {
			t.Errorf("reports %q, want only Renew passport", got)
		}
	})
}

// Bad input is an error each time, and the server stays up.
func TestBadInput(t *testing.T) {
	r := newRig(t, nil)
	ctx := context.Background()
	for _, tc := range []struct {
		tool string
		args any
		want string
	}{
		{"write_note", map[string]any{"path": "x.md"}, `unknown tool "write_note": margin's tools are search_notes, read_note`},
		{"read_note", map[string]any{"path": 5}, "path"},
		{"search_notes", map[string]any{"query": "x", "limit": "ten"}, "limit"},
		{"search_notes", map[string]any{"query": "x", "Limit": 2}, "Limit"}, // no field matched whatever its case
		{"search_notes", map[string]any{"query": "x", "limit": 1001}, "limit must be between 1 and 1000"},
		{"log_entry", map[string]any{"text": "x", "time": "yesterday"}, `time "yesterday" is not RFC 3339`},
		{"search_notes", []any{"x"}, "arguments"},
		{"propose_edit", map[string]any{"path": "Reference/Acme.md", "kind": "delete", "text": "x", "reason": "r"}, "kind"},
		{"propose_edit", map[string]any{"path": "Reference/Acme.md", "kind": "append", "text": strings.Repeat("x", 10<<20), "reason": "r"}, "more than"},
		{"propose_edit", map[string]any{"path": "Reference/Acme.md", "kind": "replace", "old_text": "\n", "text": "x", "reason": "r"}, "occurs"},
		{"propose_edit", map[string]any{"path": "Reference/Acme.md", "kind": "replace", "old_text": "not in the note", "text": "x", "reason": "r"}, "does not occur"},
		{"propose_task_change", map[string]any{"task": "Renew passport", "field": "colour", "value": "red", "reason": "r"}, "field"},
		{"ask", map[string]any{"question": "   "}, "empty"},
	} {
		res := r.call(t, tc.tool, tc.args)
		if !res.IsError || !strings.Contains(text(res), tc.want) {
			t.Errorf("%s %v: error %v: %.200s", tc.tool, tc.want, res.IsError, text(res))
		}
	}
	if res := r.call(t, "list_changes", map[string]any{}); res.IsError {
		t.Errorf("the server is not up after bad input: %s", text(res))
	}
	if sets, _ := r.ws.Changes.ChangeSets(ctx, changes.ChangeSetFilter{Status: "all"}); len(sets) != 0 {
		t.Errorf("bad input made %d change sets", len(sets))
	}
	calls := r.calls(t, "list_changes")
	if len(calls) != 14 || calls[len(calls)-1].Tool != "write_note" || !strings.HasPrefix(calls[len(calls)-1].Err, "unknown tool") {
		t.Errorf("ledger: %d calls, the first %+v", len(calls), calls[len(calls)-1])
	}
}

// Offline, ask answers from retrieval and says so.
func TestAskOfflineSaysDegraded(t *testing.T) {
	r := newRig(t, nil)
	res := r.call(t, "ask", map[string]any{"question": "How is the invoice export going?"})
	got := structured[query.Result](t, res)
	if res.IsError || got.Status != query.StatusDegraded || !strings.Contains(text(res), "Degraded answer") || !strings.Contains(text(res), "[[Tasks/Ship invoice export") {
		t.Errorf("ask offline: %s: %s", got.Status, text(res))
	}
}

// A clarifying question comes back with its session id and options, and
// ask with session_id and answers continues the session.
func TestAskClarifies(t *testing.T) {
	fake := llmtest.NewOllama(t, "qwen2.5:3b", "qwen2.5:7b", "qwen2.5:14b")
	fake.Handle(querytest.NewModel(querytest.Replies{
		"router":      {querytest.Route("query", "Strength training")},
		"planner":     {querytest.PlanClarify("insight", "How stressed were you on Friday?")},
		"clarifier":   {querytest.Clarify("How stressed were you on Friday?", "not at all", "somewhat", "very")},
		"analyzer":    {querytest.Analysis(true, []map[string]any{querytest.Finding("Very stressed on Friday (user)")}, nil)},
		"synthesizer": {querytest.Draft("Stress on Friday, as you say, plus little sleep.", "medium")},
		"evaluator":   {querytest.Eval(true)},
	}).Reply)
	cfg := fake.Config()
	cfg.Retry.LLMRetry = 0
	client, err := llm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, client)
	res := r.call(t, "ask", map[string]any{"question": "Was stress behind Friday's heavy bench?"})
	q := structured[query.Result](t, res)
	if q.Status != query.StatusClarification || q.SessionID == "" || !strings.Contains(text(res), q.SessionID) || !strings.Contains(text(res), "options: not at all; somewhat; very") {
		t.Fatalf("ask: %s", text(res))
	}
	res = r.call(t, "ask", map[string]any{"question": "Was stress behind Friday's heavy bench?", "session_id": q.SessionID, "answers": map[string]string{"q1": "very"}})
	if a := structured[query.Result](t, res); a.Status != query.StatusAnswered || !strings.Contains(text(res), "Stress on Friday") {
		t.Errorf("reply: %s: %s", a.Status, text(res))
	}
}

// What a client's tool writes is the client's in margin's history, and an
// approved proposal of it is undone like any change.
func TestClientWritesInTheHistory(t *testing.T) {
	r := newRig(t, nil)
	if res := r.call(t, "log_entry", map[string]any{"text": "Bench 3x5 @ 190", "time": "2026-11-22T18:15"}); res.IsError {
		t.Fatal(text(res))
	}
	const p = "Reference/Acme.md"
	before := r.read(t, p)
	prop := structured[mcpserver.ProposalResult](t, r.call(t, "propose_edit", map[string]any{"path": p, "kind": "append", "text": "- Prefers CSV", "reason": "r"}))
	if _, err := r.ws.Changes.Decide(context.Background(), prop.ChangeSet, []changes.ItemDecision{{Item: prop.Item, Verdict: changes.Confirmed}}); err != nil {
		t.Fatal(err)
	}
	es, err := r.ws.History.List(context.Background(), history.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var logged, applied bool
	for _, e := range es {
		logged = logged || strings.HasPrefix(e.Path, "Daily/") && e.Actor == "mcp:Test Client"
		applied = applied || e.Path == p && e.Actor == "mcp:Test Client" && e.ChangeSet == prop.ChangeSet
	}
	if !logged || !applied {
		t.Fatalf("history = %+v, want the log entry and the applied edit by mcp:Test Client", es)
	}
	if _, err := r.ws.Changes.Undo(context.Background(), r.ws.History, prop.ChangeSet, nil); err != nil {
		t.Fatal(err)
	}
	if got := r.read(t, p); got != before {
		t.Errorf("after undo:\n%s\nwant:\n%s", got, before)
	}
}
