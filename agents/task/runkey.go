package task

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/margin-md/margin/vault/edit"
	"github.com/margin-md/margin/vault/index"
)

// Source is one thing an agent reads: its task note, or one daily entry
// that links the task.
type Source struct {
	// ID is the note's path, or path#heading for an entry (with "~2" and
	// so on when a day has two entries with one heading).
	ID          string
	Fingerprint string
	Content     string
	// Entry holds the entry's place when the source is one.
	Entry *index.EntryMeta
}

// taskSource is the task note as a source.
func taskSource(path string, content []byte) Source {
	return Source{ID: path, Fingerprint: string(edit.FingerprintOf(content)), Content: string(content)}
}

// entrySources turns linked entries into sources. An entry's fingerprint
// covers its heading and text only, so an edit elsewhere in the same daily
// note does not make it look changed.
func entrySources(entries []index.EntryMeta) []Source {
	out := make([]Source, 0, len(entries))
	seen := map[string]int{}
	for i := range entries {
		e := &entries[i]
		id := e.Path + "#" + e.Heading
		seen[id]++
		if n := seen[id]; n > 1 {
			id = fmt.Sprintf("%s~%d", id, n)
		}
		content := "## " + e.Heading + "\n" + e.Text + "\n"
		out = append(out, Source{ID: id, Fingerprint: string(edit.FingerprintOf([]byte(content))), Content: content, Entry: e})
	}
	return out
}

// RunKey identifies the state a wake processes (SPEC §4.1): the agent, its
// template version, the fingerprints of the task and of each linked entry,
// and the decisions made since the last run. Two wakes with one key would
// see the same thing, so a key that already completed is not run again;
// that is what makes no-op saves, touches and reverted checkouts free.
type RunKey string

// runKey computes the key. Sources are sorted by id, so the order the index
// returns entries in does not matter; decisions are ids in the order made.
func runKey(agent, template string, sources []Source, decisions []string) RunKey {
	h := sha256.New()
	fmt.Fprintf(h, "agent\x00%s\x00template\x00%s\x00", agent, template)
	ids := make([]string, 0, len(sources))
	byID := make(map[string]string, len(sources))
	for _, s := range sources {
		ids = append(ids, s.ID)
		byID[s.ID] = s.Fingerprint
	}
	slices.Sort(ids)
	for _, id := range ids {
		fmt.Fprintf(h, "source\x00%s\x00%s\x00", id, byID[id])
	}
	for _, d := range decisions {
		fmt.Fprintf(h, "decision\x00%s\x00", d)
	}
	return RunKey(hex.EncodeToString(h.Sum(nil)))
}

// operationID names one tool effect (SPEC §4.1): hash of run key, tool and
// canonical arguments. A run re-run after a crash gets the same key, so a
// call it repeats is recognised and not applied twice.
func operationID(key RunKey, tool string, args json.RawMessage) (string, error) {
	canon, err := canonicalJSON(args)
	if err != nil {
		return "", fmt.Errorf("arguments of %s: %w", tool, err)
	}
	sum := sha256.Sum256([]byte(string(key) + "\x00" + tool + "\x00" + canon))
	return hex.EncodeToString(sum[:16]), nil
}

// canonicalJSON re-encodes a JSON value with object keys sorted and no
// insignificant space (encoding/json sorts map keys), so the same
// arguments in another key order or spacing give the same operation id.
func canonicalJSON(raw json.RawMessage) (string, error) {
	if len(strings.TrimSpace(string(raw))) == 0 {
		return "{}", nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", err
	}
	b, err := json.Marshal(v)
	return string(b), err
}
