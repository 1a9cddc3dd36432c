package server_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/server/editortest"
	"github.com/margin-md/margin/server/protocol"
)

// start runs margin serve on a copy of the sample vault and initializes it.
func start(t *testing.T, env ...string) (*editortest.Editor, string) {
	t.Helper()
	dir := editortest.SampleVault(t)
	e := editortest.Start(t, env)
	e.Initialize(dir)
	return e, dir
}

func TestInitializeReportsServerAndIndexesVault(t *testing.T) {
	dir := editortest.SampleVault(t)
	e := editortest.Start(t, nil)
	var res struct {
		ServerInfo struct{ Name string } `json:"serverInfo"`
		Caps       struct {
			Experimental struct{ Margin []string } `json:"experimental"`
		} `json:"capabilities"`
	}
	e.MustCall("initialize", map[string]any{"rootUri": "file://" + dir, "capabilities": map[string]any{}}, &res)
	if res.ServerInfo.Name != "margin" {
		t.Errorf("serverInfo.name = %q, want margin", res.ServerInfo.Name)
	}
	if !strings.Contains(strings.Join(res.Caps.Experimental.Margin, ","), "vault/search") {
		t.Errorf("capabilities do not list vault/search: %v", res.Caps.Experimental.Margin)
	}
	e.Notify("initialized", map[string]any{})

	e.WaitFor("margin/indexStatus after the first scan", func(m editortest.Message) bool {
		return m.Method == "margin/indexStatus" && strings.Contains(string(m.Params), `"kind":"scan"`)
	})
	var st protocol.StatusResult
	e.MustCall("vault/status", nil, &st)
	if st.Vault != dir || st.DailyNotes < 20 || st.Tasks < 7 || !st.Watching {
		t.Errorf("status = %+v, want the sample vault with ≥20 daily notes, ≥7 tasks, watching", st)
	}
	if st.Failed < 1 {
		t.Errorf("status.failed = %d, want the broken-frontmatter note counted", st.Failed)
	}
}

func TestRootFromInitializationOptions(t *testing.T) {
	dir := editortest.SampleVault(t)
	e := editortest.Start(t, nil)
	e.MustCall("initialize", map[string]any{"initializationOptions": map[string]any{"vault": dir}}, nil)
	var st protocol.StatusResult
	e.MustCall("vault/status", nil, &st)
	if st.Vault != dir {
		t.Errorf("vault = %q, want %q", st.Vault, dir)
	}
}

func TestCoverageAccountsForEveryFile(t *testing.T) {
	// No agents: their startup wakes write reports and templates (and
	// temp files beside them) while the test walks the vault.
	e, dir := start(t, "MARGIN_AGENTS_AUTO_CREATE=false")
	var cov protocol.CoverageResult
	e.MustCall("vault/coverage", nil, &cov)
	byPath := map[string]string{}
	for _, f := range cov.Files {
		byPath[f.Path] = string(f.State) + ": " + f.Reason
	}
	var want int
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() && (rel == ".obsidian" || rel == ".margin") {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			want++
			if _, ok := byPath[filepath.ToSlash(rel)]; !ok {
				t.Errorf("%s is not accounted for in vault/coverage", rel)
			}
		}
		return nil
	})
	if len(cov.Files) != want {
		t.Errorf("coverage lists %d files, the vault has %d", len(cov.Files), want)
	}
	if got := byPath["Inbox/broken frontmatter.md"]; !strings.HasPrefix(got, "failed: broken frontmatter") {
		t.Errorf("broken note coverage = %q, want failed with the YAML error", got)
	}
	if got := byPath["Attachments/diagram.png"]; !strings.HasPrefix(got, "skipped: not markdown") {
		t.Errorf("png coverage = %q, want skipped: not markdown", got)
	}
}

func TestSearchFindsEntriesWithHeadings(t *testing.T) {
	e, _ := start(t)
	var res protocol.SearchResult
	e.MustCall("vault/search", map[string]any{"query": "bench press", "from": "2026-11-09", "to": "2026-11-15"}, &res)
	if len(res.Hits) == 0 {
		t.Fatal("no hits for bench press in the heavy week")
	}
	if res.Total != len(res.Hits) || res.Truncated {
		t.Errorf("total %d, truncated %v for %d hits; want all of them, not cut", res.Total, res.Truncated, len(res.Hits))
	}

	for _, h := range res.Hits {
		if !strings.HasPrefix(h.Path, "Daily/2026-11-") || h.Heading == "" || h.Line < 1 || h.Date < "2026-11-09" || h.Date > "2026-11-15" {
			t.Errorf("hit %+v: want a daily entry in the range with heading and line", h)
		}
	}
	var cut protocol.SearchResult
	e.MustCall("vault/search", map[string]any{"query": "bench", "limit": 1}, &cut)
	if len(cut.Hits) != 1 || cut.Total < 2 || !cut.Truncated {
		t.Errorf("limit 1: %d hits, total %d, truncated %v; want 1 hit of several, cut", len(cut.Hits), cut.Total, cut.Truncated)
	}
}

// TestSearchQuestion: a question in the default mode (none, or auto)
// ranks the notes holding most of its words, stop words aside; mode all
// still needs every word.
func TestSearchQuestion(t *testing.T) {
	e, _ := start(t)
	const question = "how much did I sleep before the failed bench?"
	var all protocol.SearchResult
	e.MustCall("vault/search", map[string]any{"query": question, "mode": "all"}, &all)
	if all.Total != 0 {
		t.Fatalf("mode all finds %d notes; want none for this test to mean something", all.Total)
	}
	for _, params := range []map[string]any{{"query": question}, {"query": question, "mode": "auto"}} {
		var res protocol.SearchResult
		e.MustCall("vault/search", params, &res)
		if len(res.Hits) == 0 || res.Hits[0].Path != "Daily/2026-11-13.md" || res.Hits[0].Heading != "18:15" {
			t.Errorf("%v: %+v; want Daily/2026-11-13.md#18:15 first", params, res.Hits)
		}
	}
}

func TestWatcherIndexesNewNote(t *testing.T) {
	e, dir := start(t)
	os.MkdirAll(filepath.Join(dir, "Fresh", "Deep"), 0o755)
	if err := os.WriteFile(filepath.Join(dir, "Fresh", "Deep", "kayak.md"), []byte("# Kayak\n\nPaddled the fjord zanzibarquux today.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(editortest.Timeout)
	for {
		var res protocol.SearchResult
		e.MustCall("vault/search", map[string]any{"query": "zanzibarquux"}, &res)
		if len(res.Hits) == 1 && res.Hits[0].Path == "Fresh/Deep/kayak.md" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("new note in a new folder never indexed; last hits %+v", res.Hits)
		}
		time.Sleep(20 * time.Millisecond) // polling the state, not waiting for time
	}
}

// One test per rule of the robustness contract (SPEC §6).

func TestMalformedJSONGetsParseErrorAndConnectionStays(t *testing.T) {
	e, _ := start(t)
	e.SendRaw(editortest.Frame([]byte(`{"jsonrpc":"2.0","id":99,"method":`)))
	m := e.WaitFor("a -32700 reply", func(m editortest.Message) bool { return m.Error != nil && m.Error.Code == -32700 })
	if string(m.ID) != "null" {
		t.Errorf("parse error id = %s, want null", m.ID)
	}
	var st protocol.StatusResult
	e.MustCall("vault/status", nil, &st)
}

func TestBadHeaderGetsParseErrorAndNextMessageIsServed(t *testing.T) {
	e, _ := start(t)
	e.SendRaw([]byte("Content-Length: twelve\r\n\r\n{\"x\":1}"))
	e.WaitFor("a -32700 reply", func(m editortest.Message) bool { return m.Error != nil && m.Error.Code == -32700 })
	e.SendRaw([]byte("this is not a header at all\r\n\r\n"))
	var st protocol.StatusResult
	e.MustCall("vault/status", nil, &st)
	if st.Notes == 0 {
		t.Error("status after bad headers has no notes")
	}
}

func TestOversizeMessageIsDiscardedAndAnswered(t *testing.T) {
	e, _ := start(t, "MARGIN_SERVER_MAX_MESSAGE_SIZE=4096")
	big := `{"jsonrpc":"2.0","id":4242,"method":"vault/search","params":{"query":"` + strings.Repeat("a", 1<<20) + `"}}`
	e.SendRaw(editortest.Frame([]byte(big)))
	m := e.WaitFor("the oversize reply", func(m editortest.Message) bool { return string(m.ID) == "4242" })
	if m.Error == nil || m.Error.Code != -32600 || !strings.Contains(m.Error.Message, "exceeds") {
		t.Errorf("oversize reply = %+v, want -32600 naming the limit", m.Error)
	}
	var st protocol.StatusResult
	e.MustCall("vault/status", nil, &st)
}

// A header may announce far more than ever comes (2 GB, then a short body
// and the next request): margin answers at once rather than wait for the
// bytes, and the next request is served.
func TestLyingContentLengthIsAnsweredAndNextServed(t *testing.T) {
	e, _ := start(t)
	e.SendRaw([]byte("Content-Length: 2000000000\r\n\r\n" + `{"jsonrpc":"2.0","id":4343,"method":"vault/status"}`))
	m := e.WaitFor("the oversize reply", func(m editortest.Message) bool { return string(m.ID) == "4343" })
	if m.Error == nil || m.Error.Code != -32600 {
		t.Errorf("reply to a 2 GB header = %+v, want -32600", m.Error)
	}
	var st protocol.StatusResult
	e.MustCall("vault/status", nil, &st)
}

func TestJSONRPCVersionOtherThan20IsInvalidRequest(t *testing.T) {
	e, _ := start(t)
	e.SendRaw(editortest.Frame([]byte(`{"jsonrpc":"1.0","id":4444,"method":"vault/status"}`)))
	m := e.WaitFor("the reply to a 1.0 request", func(m editortest.Message) bool { return string(m.ID) == "4444" })
	if m.Error == nil || m.Error.Code != -32600 || !strings.Contains(m.Error.Message, "2.0") {
		t.Errorf("reply to jsonrpc 1.0 = %+v, want -32600 asking for 2.0", m.Error)
	}
}

func TestUnknownMethod(t *testing.T) {
	e, _ := start(t)
	err := e.Call("vault/frobnicate", nil, nil)
	if err == nil || err.Code != -32601 {
		t.Fatalf("unknown method reply = %v, want -32601", err)
	}
}

func TestInvalidParamsNameTheField(t *testing.T) {
	e, _ := start(t)
	for _, tc := range []struct {
		name   string
		params any
		field  string
	}{
		{"wrong type", map[string]any{"query": 5}, "query"},
		{"bad mode", map[string]any{"query": "x", "mode": "fuzzy"}, "mode"},
		{"bad date", map[string]any{"query": "x", "from": "last week"}, "from"},
		{"nothing to search", map[string]any{}, "query"},
		{"tags not a list", map[string]any{"query": "x", "tags": "gym"}, "tags"},
		{"limit past the most", map[string]any{"query": "x", "limit": 1001}, "limit"},
		{"from after to", map[string]any{"from": "2026-11-20", "to": "2026-11-10"}, "from"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := e.Call("vault/search", tc.params, nil)
			if err == nil || err.Code != -32602 || !strings.Contains(err.Message, tc.field) {
				t.Errorf("reply = %v, want -32602 naming %q", err, tc.field)
			}
		})
	}
}

func TestNULInAPathIsInvalidParams(t *testing.T) {
	e, _ := start(t, "MARGIN_AGENTS_AUTO_CREATE=false")
	for _, tc := range []struct {
		method string
		params map[string]any
		field  string
	}{
		{"agents/create", map[string]any{"task": "Tasks/a\x00b.md"}, "task"},
		{"agents/get", map[string]any{"task": "Tasks/a\x00b.md"}, "task"},
		{"reports/get", map[string]any{"task": "Tasks/a\x00b.md"}, "task"},
		{"changes/list", map[string]any{"task": "\x00"}, "task"},
		{"decisions/list", map[string]any{"task": "Tasks/\x00.md"}, "task"},
		{"vault/search", map[string]any{"query": "x", "glob": "Daily/\x00*"}, "glob"},
	} {
		err := e.Call(tc.method, tc.params, nil)
		if err == nil || err.Code != -32602 || !strings.Contains(err.Message, tc.field) || !strings.Contains(err.Message, "NUL") {
			t.Errorf("%s with a NUL in %s = %v, want -32602 naming %s and the NUL", tc.method, tc.field, err, tc.field)
		}
	}
}

// Neovim 0.7 encodes an empty Lua table as `[]`; it must read as no params.
func TestEmptyArrayParamsAreNoParams(t *testing.T) {
	e, _ := start(t)
	var list struct {
		ChangeSets []any `json:"changeSets"`
	}
	if err := e.Call("changes/list", []any{}, &list); err != nil {
		t.Fatalf("changes/list with [] = %v, want the open change sets", err)
	}
	if err := e.Call("changes/list", []any{"pending"}, nil); err == nil || err.Code != -32602 {
		t.Errorf("changes/list with [\"pending\"] = %v, want -32602", err)
	}
	if err := e.Call("vault/search", []any{}, nil); err == nil || err.Code != -32602 || !strings.Contains(err.Message, "query") {
		t.Errorf("vault/search with [] = %v, want -32602 naming query", err)
	}
}

func TestRequestBeforeInitialize(t *testing.T) {
	e := editortest.Start(t, nil)
	err := e.Call("vault/status", nil, nil)
	if err == nil || err.Code != -32002 {
		t.Fatalf("status before initialize = %v, want -32002", err)
	}
}

func TestCancelRequest(t *testing.T) {
	e, _ := start(t)
	id, reply := e.Send("margin/test.block", map[string]any{"workDoneToken": "blk"})
	e.WaitFor("the blocking request to start", func(m editortest.Message) bool {
		return m.Method == "$/progress" && strings.Contains(string(m.Params), `"blk"`)
	})
	e.Notify("$/cancelRequest", map[string]any{"id": id})
	err := e.Await(reply, nil)
	if err == nil || err.Code != -32800 {
		t.Fatalf("cancelled request reply = %v, want -32800", err)
	}
}

func TestPanicBecomesInternalError(t *testing.T) {
	e, _ := start(t)
	err := e.Call("margin/test.panic", nil, nil)
	if err == nil || err.Code != -32603 {
		t.Fatalf("panicking handler reply = %v, want -32603", err)
	}
	var st protocol.StatusResult
	e.MustCall("vault/status", nil, &st)
}

func TestPathsOutsideVaultAreRefused(t *testing.T) {
	e, _ := start(t)
	for _, glob := range []string{"../../etc/*", "/etc/*.conf", "Daily/../../*"} {
		err := e.Call("vault/search", map[string]any{"glob": glob}, nil)
		if err == nil || err.Code != -33004 {
			t.Errorf("glob %q: reply = %v, want -33004 outside vault", glob, err)
		}
	}
}

func TestProgressForWorkDoneToken(t *testing.T) {
	e, _ := start(t)
	var res json.RawMessage
	e.MustCall("vault/rescan", map[string]any{"workDoneToken": "tok-1"}, &res)
	var kinds []string
	for _, m := range e.Received() {
		if m.Method != "$/progress" {
			continue
		}
		var p struct {
			Token string
			Value struct{ Kind string }
		}
		json.Unmarshal(m.Params, &p)
		if p.Token == "tok-1" {
			kinds = append(kinds, p.Value.Kind)
		}
	}
	if len(kinds) < 2 || kinds[0] != "begin" || kinds[len(kinds)-1] != "end" {
		t.Errorf("progress kinds = %v, want begin … end", kinds)
	}
	// The rescan says why it ran, in status and in the editor's log.
	var st protocol.StatusResult
	e.MustCall("vault/status", nil, &st)
	if st.LastRescan.IsZero() || st.LastRescanReason == "" {
		t.Errorf("status after rescan = %+v, want lastRescan and its reason", st)
	}
	e.WaitFor("margin/indexStatus for the rescan, with its reason", func(m editortest.Message) bool {
		return m.Method == "margin/indexStatus" && strings.Contains(string(m.Params), `"kind":"rescan"`) &&
			strings.Contains(string(m.Params), "requested by the client")
	})
	e.WaitFor("window/logMessage about the rescan", func(m editortest.Message) bool {
		return m.Method == "window/logMessage" && strings.Contains(string(m.Params), "rescan")
	})
}

func TestShutdownThenExitIsCleanExit(t *testing.T) {
	e, _ := start(t)
	e.MustCall("shutdown", nil, nil)
	if err := e.Call("vault/status", nil, nil); err == nil || err.Code != -32600 {
		t.Errorf("request after shutdown = %v, want -32600", err)
	}
	e.Notify("exit", nil)
	if code := e.Exit(); code != 0 {
		t.Errorf("exit code after shutdown = %d, want 0", code)
	}
}

func TestExitWithoutShutdownIsExitOne(t *testing.T) {
	e, _ := start(t)
	e.Notify("exit", nil)
	if code := e.Exit(); code != 1 {
		t.Errorf("exit code without shutdown = %d, want 1", code)
	}
}

func TestOpenDocumentsAreTracked(t *testing.T) {
	e, dir := start(t)
	uri := "file://" + filepath.Join(dir, "Tasks", "Renew passport.md")
	e.Notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{"uri": uri, "languageId": "markdown", "version": 1, "text": "x"}})
	e.Notify("textDocument/didChange", map[string]any{"textDocument": map[string]any{"uri": uri, "version": 2}, "contentChanges": []any{map[string]any{"text": "y"}}})
	// A read sees every document change sent before it: no waiting.
	var st protocol.StatusResult
	e.MustCall("vault/status", nil, &st)
	if len(st.OpenNotes) != 1 || st.OpenNotes[0] != "Tasks/Renew passport.md" {
		t.Fatalf("open notes = %v, want the passport task", st.OpenNotes)
	}
	e.Notify("textDocument/didClose", map[string]any{"textDocument": map[string]any{"uri": uri}})
	e.MustCall("vault/status", nil, &st)
	if len(st.OpenNotes) != 0 {
		t.Errorf("open notes after didClose = %v, want none", st.OpenNotes)
	}
}

func TestStatusReportsModelAndAgents(t *testing.T) {
	waitProbe := func(e *editortest.Editor) protocol.StatusResult {
		t.Helper()
		deadline := time.Now().Add(editortest.Timeout)
		for {
			var st protocol.StatusResult
			e.MustCall("vault/status", nil, &st)
			if !st.Model.Checked.IsZero() {
				return st
			}
			if time.Now().After(deadline) {
				t.Fatalf("the model was never probed: %+v", st)
			}
			time.Sleep(20 * time.Millisecond) // polling a state
		}
	}

	t.Run("reachable", func(t *testing.T) {
		ollama := llmtest.NewOllama(t, "qwen2.5:3b", "qwen2.5:7b", "qwen2.5:14b")
		ollama.Handle(func(llmtest.OllamaRequest) llmtest.Reply {
			return llmtest.Reply{Status: 500, Error: "not in this test"}
		})
		e, _ := start(t, "OLLAMA_HOST="+ollama.URL, "MARGIN_AGENTS_AUTO_CREATE=false")
		st := waitProbe(e)
		if st.Model.Provider != "ollama" || st.Model.Model != "qwen2.5:7b" || !st.Model.Reachable || st.Model.Error != "" {
			t.Errorf("model status %+v, want ollama qwen2.5:7b reachable", st.Model)
		}
		if st.Agents.Active != 0 {
			t.Errorf("agents %+v with auto_create off, want none", st.Agents)
		}
	})

	// A task template that names its own model: the probe asks for it, and
	// once the agents have called it, it is the model status shows.
	templated := func(t *testing.T, pulled ...string) (*editortest.Editor, *llmtest.Ollama) {
		t.Helper()
		ollama := llmtest.NewOllama(t, pulled...)
		ollama.Handle(func(llmtest.OllamaRequest) llmtest.Reply {
			return llmtest.Reply{Status: 500, Error: "not in this test"}
		})
		dir := editortest.SampleVault(t)
		editortest.TaskTemplate(t, dir, "qwen3:32b")
		e := editortest.Start(t, []string{"OLLAMA_HOST=" + ollama.URL})
		e.Initialize(dir)
		return e, ollama
	}
	t.Run("a template's model not pulled", func(t *testing.T) {
		e, _ := templated(t, "qwen2.5:3b", "qwen2.5:7b", "qwen2.5:14b")
		st := waitProbe(e)
		if !strings.Contains(st.Model.Error, "pull qwen3:32b") {
			t.Errorf("model status %+v, want the pull of the template's model", st.Model)
		}
	})
	t.Run("the model of the task agents' calls", func(t *testing.T) {
		e, ollama := templated(t, "qwen2.5:3b", "qwen2.5:7b", "qwen2.5:14b", "qwen3:32b")
		deadline := time.Now().Add(editortest.Timeout)
		for {
			var st protocol.StatusResult
			e.MustCall("vault/status", nil, &st)
			if st.Model.Model == "qwen3:32b" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("model status %+v after %d model calls, want the template's qwen3:32b", st.Model, len(ollama.Requests()))
			}
			time.Sleep(20 * time.Millisecond) // polling a state
		}
	})

	t.Run("unreachable", func(t *testing.T) {
		e, _ := start(t, "OLLAMA_HOST=http://127.0.0.1:1", "MARGIN_AGENTS_AUTO_CREATE=false")
		st := waitProbe(e)
		if st.Model.Reachable || !strings.Contains(st.Model.Error, "ollama serve") {
			t.Errorf("model status %+v, want unreachable with advice", st.Model)
		}
	})
}
