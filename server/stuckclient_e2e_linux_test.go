package server_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/server/editortest"
	"github.com/margin-md/margin/vault/store"
)

// TestStuckClientDoesNotStopTheAgents is an editor that stops reading
// margin's stdout (hung, or suspended with ^Z) while the person keeps
// editing notes. Its pipe fills. The agents must go on waking and writing
// their reports, which are files, not messages; and margin, told to shut
// down and exit, must exit.
func TestStuckClientDoesNotStopTheAgents(t *testing.T) {
	ollama := llmtest.NewOllama(t, "qwen2.5:3b", "qwen2.5:7b", "qwen2.5:14b")
	reportingModel(ollama)
	vault := editortest.SampleVault(t)
	cmd := exec.Command(editortest.Binary(t), "serve")
	cmd.Env = append(os.Environ(), agentEnv(ollama.URL, "MARGIN_AGENTS_AUTO_CREATE=true", "MARGIN_LOG_LEVEL=info")...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	// One page of pipe, so that a little output fills it.
	if _, _, errno := syscall.Syscall(syscall.SYS_FCNTL, out.Fd(), syscall.F_SETPIPE_SZ, 4096); errno != 0 {
		t.Fatalf("shrinking the pipe: %v", errno)
	}
	cmd.Stdout, cmd.Stderr = w, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	var waitErr error
	exited := make(chan struct{})
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})

	send := func(msg string) {
		t.Helper()
		if _, err := stdin.Write(editortest.Frame([]byte(msg))); err != nil {
			t.Fatal(err)
		}
	}
	send(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"rootUri":%q,"capabilities":{}}}`, "file://"+vault))
	r := bufio.NewReaderSize(out, 16) // reads little beyond the reply: the rest stays in the pipe
	for {
		body, err := editortest.ReadFrame(r)
		if err != nil {
			t.Fatalf("reading the initialize reply: %v", err)
		}
		var m struct{ ID json.RawMessage }
		if json.Unmarshal(body, &m) == nil && string(m.ID) == "1" {
			break
		}
	}
	send(`{"jsonrpc":"2.0","method":"initialized","params":{}}`)

	// From here on nothing reads stdout. A search with many hits is a
	// reply larger than the pipe: it fills it for good.
	send(`{"jsonrpc":"2.0","id":2,"method":"vault/search","params":{"query":"the","mode":"any","limit":200}}`)
	waitStalled(t, out)

	// Every task changes, twice; each change is a wake that logs, writes
	// its report and tells the client, who reads none of it. The second
	// change waits for the first's wakes, so that each is a wake of its
	// own.
	tasks, err := filepath.Glob(filepath.Join(vault, "Tasks", "*.md"))
	if err != nil || len(tasks) == 0 {
		t.Fatalf("no tasks in the sample vault (%v)", err)
	}
	for round := range 2 {
		for _, p := range tasks {
			f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(f, "\nLine %d for the agent to look at.\n", round)
			f.Close()
		}
		// The startup wake is the first.
		wakes := round + 2
		// Wakes run one at a time, in priority order: under -race on a
		// loaded machine the last of seven took over 30 s (05:50 UTC,
		// load 20), while a stuck client stops them for good.
		deadline := time.Now().Add(90 * time.Second)
		for {
			behind := tasksBehind(t, vault, tasks, wakes)
			if len(behind) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("with the client not reading, these tasks' reports did not record wake %d within 90 s: %v", wakes, behind)
			}
			time.Sleep(100 * time.Millisecond) // polling the reports
		}
	}

	// An editor waits for the reply to shutdown before it sends exit; this
	// one cannot read it, so it waits for what shutdown does first: the
	// vault closes, and with it the watch's lock.
	send(`{"jsonrpc":"2.0","id":3,"method":"shutdown"}`)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) { // polling the lock
		held, err := store.Held(filepath.Join(vault, ".margin", "watch.lock"))
		if err != nil {
			t.Fatal(err)
		}
		if !held {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("margin serve still watched the vault 20 s after shutdown while its client was not reading")
		}
	}
	send(`{"jsonrpc":"2.0","method":"exit"}`)
	select {
	case <-exited:
		if waitErr != nil {
			t.Errorf("margin serve exited with %v, want status 0", waitErr)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("margin serve did not exit within 20 s of shutdown and exit while its client was not reading")
	}
}

// tasksBehind lists the tasks whose report does not yet record wake n.
func tasksBehind(t *testing.T, vault string, tasks []string, n int) []string {
	var behind []string
	for _, p := range tasks {
		stem := strings.TrimSuffix(filepath.Base(p), ".md")
		report, err := os.ReadFile(filepath.Join(vault, "Margin", "Reports", stem+".md"))
		wakes := 0
		if err == nil {
			for _, line := range strings.Split(string(report), "\n") {
				if n, ok := strings.CutPrefix(line, "wake: "); ok {
					wakes, _ = strconv.Atoi(strings.TrimSpace(n))
				}
			}
		}
		if wakes < n {
			behind = append(behind, fmt.Sprintf("%s (wake %d)", stem, wakes))
		}
	}
	return behind
}

// waitStalled waits until margin has written into the pipe read by r and
// then written nothing more for a second: it is blocked on the pipe. (A
// pipe's capacity counts pages, not bytes, so a full one may hold less than
// its size.)
func waitStalled(t *testing.T, r *os.File) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	last, since := int32(-1), time.Now()
	for time.Now().Before(deadline) {
		var unread int32
		if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, r.Fd(), syscall.TIOCINQ, uintptr(unsafe.Pointer(&unread))); errno != 0 {
			t.Fatalf("FIONREAD: %v", errno)
		}
		if unread != last {
			last, since = unread, time.Now()
		} else if unread > 0 && time.Since(since) > time.Second {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("margin kept writing (or wrote nothing) for 20 s: %d bytes unread", last)
}
