package changes

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/margin-md/margin/vault/edit"
	"github.com/margin-md/margin/vault/note"
)

// What an AI application connected over MCP (SPEC §10) proposes goes into
// change sets like an agent's proposals, and a person decides them the
// same ways. Such a set belongs to the client, not to a task agent: its
// agent is ClientAgent(name), so the decisions ledger and the set file
// name the application, a client's proposals never reach an agent's
// "Recent User Decisions", and a decision wakes no agent (the change to
// the note does, through the watcher, when it is a task). One call is one
// set, as one wake is one set of an agent's: it carries one reason and
// targets one note, the set's task, which is where it is applied.

// ClientPrefix starts the agent id of a change set an MCP client proposed.
const ClientPrefix = "mcp:"

// ClientAgent is the agent id of the change sets the client named name
// (its clientInfo.name) proposes.
func ClientAgent(name string) string { return ClientPrefix + ClientName(name) }

// ClientName is the client's name as margin records it: one line, at
// most 100 characters, "unknown client" when it gave none.
func ClientName(name string) string {
	n := strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(name, ""))
	n = note.OneLine(n)
	if utf8.RuneCountInString(n) > 100 {
		n = string([]rune(n)[:100])
	}
	if n == "" {
		return "unknown client"
	}
	return n
}

// IsClient reports whether agent is a client's, not a task agent's.
func IsClient(agent string) bool { return strings.HasPrefix(agent, ClientPrefix) }

// The tool of a client's proposed edit of a note.
const EditTool = "propose_edit"

// Kinds of a proposed edit.
const (
	EditCreate  = "create"
	EditAppend  = "append"
	EditReplace = "replace"
)

// MaxEditText bounds the text of a proposed edit: a person reads it in a
// diff before it is applied.
const MaxEditText = 256 << 10

// EditArgs are a proposed edit of a note: a new note, text appended at its
// end, or old_text (which must occur exactly once) replaced by text.
type EditArgs struct {
	Path    string `json:"path"`
	Kind    string `json:"kind"`
	Text    string `json:"text"`
	OldText string `json:"old_text,omitempty"`
	Reason  string `json:"reason"`
}

// ProposeEdit puts a client's edit of a note into a change set of its own,
// with a diff of what it would change; nothing is written to the note.
func (c *Changes) ProposeEdit(ctx context.Context, client string, a EditArgs) (ChangeSet, error) {
	p, err := c.editablePath(a.Path)
	if err != nil {
		return ChangeSet{}, err
	}
	a.Path = p
	args, _ := json.Marshal(a) // strings only
	if err := checkEdit(args); err != nil {
		return ChangeSet{}, err
	}
	snap, err := c.v.Files.Read(p)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return ChangeSet{}, err
	}
	if limit := c.v.MaxFileSize; int64(len(snap.Content)) > limit {
		return ChangeSet{}, fmt.Errorf("%s is %d bytes, more than margin edits (vault.max_file_size, %d)", p, len(snap.Content), limit)
	}
	out, err := applyEdit(a, snap.Content, exists)
	if err != nil {
		return ChangeSet{}, err
	}
	it := ChangeItem{Tool: EditTool, Args: args, Summary: because(editAction(a), a.Reason)}
	it.field, it.Base = editTarget(snap.Content, exists, a)
	return c.proposeItem(ctx, client, p, it, unifiedDiff(p, snap.Content, out))
}

// ProposeTaskChange puts a client's change of one field of a task note
// into a change set of its own, checked as an agent's proposal is.
// A labels value is a comma-separated list.
func (c *Changes) ProposeTaskChange(ctx context.Context, client, task, field, value, reason string) (ChangeSet, error) {
	ft, ok := fieldTool(field)
	if !ok {
		return ChangeSet{}, fmt.Errorf("field %q is not one of %s", field, strings.Join(TaskFields(), ", "))
	}
	p, err := c.editablePath(task)
	if err != nil {
		return ChangeSet{}, err
	}
	snap, err := c.v.Files.Read(p)
	if errors.Is(err, fs.ErrNotExist) {
		return ChangeSet{}, fmt.Errorf("no note at %s: %w", p, ErrNotATask)
	}
	if err != nil {
		return ChangeSet{}, err
	}
	n := note.Parse(p, snap.Content, c.v.Rules.TaskOptions())
	if n.Task == nil {
		return ChangeSet{}, fmt.Errorf("%s: %w", p, ErrNotATask)
	}
	m := map[string]any{ft.arg: strings.TrimSpace(value)}
	if ft.clientValue != nil {
		m[ft.arg] = ft.clientValue(value)
	}
	args, _ := json.Marshal(m)
	if err := CheckValues(ft.name, args); err != nil {
		return ChangeSet{}, err
	}
	ps, unchanged, err := ft.items(n, Shown{}, args)
	if err != nil {
		return ChangeSet{}, err
	}
	if len(ps) == 0 {
		return ChangeSet{}, fmt.Errorf("nothing to change: %s", strings.Join(unchanged, "; "))
	}
	it := ChangeItem{Tool: ft.name, Args: args, Summary: because(ps[0].Summary, reason), Base: ItemBase(n, ft.name, args)}
	it.field, _ = target(n, ft.name, args)
	// A client's newer value for a field supersedes its older one on the
	// same task, not on every task it proposed to.
	it.field = p + "\x00" + it.field
	out, stale, err := applyItem(p, snap.Content, it, c.v.Rules.TaskOptions())
	if err != nil {
		return ChangeSet{}, err
	}
	if stale != "" {
		return ChangeSet{}, errors.New(stale)
	}
	return c.proposeItem(ctx, client, p, it, unifiedDiff(p, snap.Content, out))
}

// ErrNotATask refuses a task change proposed on a note that is no task.
var ErrNotATask = errors.New("not a task note")

// editablePath cleans a note path a client names, relative to the vault,
// and refuses what it may not propose to change: absolute or outside the
// vault, not a markdown note, in a hidden folder (the state dir,
// .obsidian, .git) or among margin's own files, whose changes have their
// own flows. Symlinks out of the vault are the root's to refuse.
func (c *Changes) editablePath(name string) (string, error) {
	p, err := edit.Clean(name)
	if err != nil {
		return "", err
	}
	if strings.ContainsFunc(p, unicode.IsControl) {
		return "", fmt.Errorf("%q has a line break or another control character: %w", p, edit.ErrInvalidPath)
	}
	if path.Ext(p) != ".md" {
		return "", fmt.Errorf("%s is not a markdown note (.md): %w", p, edit.ErrInvalidPath)
	}
	for part := range strings.SplitSeq(p, "/") {
		if strings.HasPrefix(part, ".") {
			return "", fmt.Errorf("%s is in a hidden folder: %w", p, edit.ErrInvalidPath)
		}
	}
	out := strings.Trim(path.Clean("/"+c.outputFolder()), "/") + "/"
	if strings.HasPrefix(p, out) {
		return "", fmt.Errorf("%s is one of margin's own files, which change through their own flows: %w", p, edit.ErrInvalidPath)
	}
	return p, nil
}

// proposeItem stores a client's one-item change set on the note at p and
// writes its file, diff included.
func (c *Changes) proposeItem(ctx context.Context, client, p string, it ChangeItem, diff string) (ChangeSet, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	id := newChangeSetID()
	it.ID, it.Status = "c1", ItemPending
	name := ClientName(client)
	cs := ChangeSet{ID: id, Agent: ClientAgent(name), Task: p, Status: SetPending, Created: now, Expires: now.Add(c.opts.ExpireAfter),
		Path: ChangeSetPath(c.outputFolder(), "MCP "+clientFolder(name), now, id), Items: []ChangeItem{it}}
	older, err := c.store.addChangeSets(ctx, []ChangeSet{cs}, nil, now)
	if err != nil {
		return ChangeSet{}, err
	}
	data, err := renderChangeSet(cs, map[string]string{it.ID: diff})
	if err != nil {
		return ChangeSet{}, fmt.Errorf("rendering change set %s: %w", cs.ID, err)
	}
	fp, err := c.v.Files.WriteContext(edit.WithCause(ctx, c.cause(ctx, cs, p)), cs.Path, "", data)
	if err != nil {
		return ChangeSet{}, fmt.Errorf("writing change set %s: %w", cs.ID, err)
	}
	if err := c.store.setFileFingerprint(ctx, cs.ID, string(fp)); err != nil {
		return ChangeSet{}, err
	}
	c.notify("margin/changeSetCreated", SetCreated{ID: cs.ID, Task: cs.Task, Path: cs.Path, Items: cs.Items})
	for _, id := range older {
		old, err := c.store.ChangeSet(ctx, id)
		if err != nil {
			return ChangeSet{}, err
		}
		c.writeSetFile(ctx, old)
	}
	return c.store.ChangeSet(ctx, cs.ID)
}

// clientFolder is the client's name as a folder name: letters, digits,
// spaces, dots, dashes and underscores.
func clientFolder(name string) string {
	f := strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune(" ._-", r) {
			return r
		}
		return '-'
	}, name)
	f = strings.Trim(f, " .")
	if f == "" {
		return "client"
	}
	return f
}

// checkEdit refuses a proposed edit that cannot be applied to any note:
// the value checks of SPEC §4.2 for the edit's arguments.
func checkEdit(args json.RawMessage) error {
	var a EditArgs
	if err := json.Unmarshal(args, &a); err != nil {
		return fmt.Errorf("the arguments are not a JSON object: %w", err)
	}
	switch a.Kind {
	case EditCreate, EditAppend:
		if strings.TrimSpace(a.Text) == "" {
			return fmt.Errorf("text is blank: a %s needs text", a.Kind)
		}
		if a.OldText != "" {
			return fmt.Errorf("old_text goes only with a replace, not a %s", a.Kind)
		}
	case EditReplace:
		if a.OldText == "" {
			return errors.New("a replace needs old_text, the text to replace as it is in the note")
		}
		if a.OldText == a.Text {
			return errors.New("text is old_text: the replace changes nothing")
		}
	default:
		return fmt.Errorf("kind %q is not one of create, append, replace", a.Kind)
	}
	for what, s := range map[string]string{"text": a.Text, "old_text": a.OldText} {
		switch {
		case len(s) > MaxEditText:
			return fmt.Errorf("%s is %d bytes, more than %d: propose a smaller edit", what, len(s), MaxEditText)
		case !utf8.ValidString(s):
			return fmt.Errorf("%s is not valid UTF-8", what)
		case strings.IndexByte(s, 0) >= 0:
			return fmt.Errorf("%s contains a NUL byte", what)
		}
	}
	if strings.TrimSpace(a.Reason) == "" {
		return errors.New("reason is blank: say why, in one line; the person reads it before deciding")
	}
	return nil
}

// applyEdit is the note after the edit, or why the edit cannot be made to
// the note as it is.
func applyEdit(a EditArgs, src []byte, exists bool) ([]byte, error) {
	switch {
	case a.Kind == EditCreate && exists:
		return nil, fmt.Errorf("%s exists already: propose an append or a replace", a.Path)
	case a.Kind != EditCreate && !exists:
		return nil, fmt.Errorf("no note at %s: %w", a.Path, fs.ErrNotExist)
	}
	switch a.Kind {
	case EditCreate:
		return []byte(withNewline(a.Text)), nil
	case EditAppend:
		out := bytes.Clone(src)
		if len(out) > 0 && out[len(out)-1] != '\n' {
			out = append(out, '\n')
		}
		return append(out, withNewline(a.Text)...), nil
	}
	switch n := bytes.Count(src, []byte(a.OldText)); n {
	case 0:
		return nil, fmt.Errorf("old_text does not occur in %s: quote the note's text exactly", a.Path)
	case 1:
		return bytes.Replace(src, []byte(a.OldText), []byte(a.Text), 1), nil
	default:
		return nil, fmt.Errorf("old_text occurs %d times in %s: quote more of the note so that it occurs once", n, a.Path)
	}
}

func withNewline(s string) string {
	if strings.HasSuffix(s, "\n") {
		return s
	}
	return s + "\n"
}

// editTarget is what a proposed edit points at in the note, for its base:
// whether the note exists, and for an append the lines it follows (the
// diff's context), for a replace that old_text occurs once. field keys
// the edit for superseding: only the same edit proposed again replaces it.
func editTarget(src []byte, exists bool, a EditArgs) (field, base string) {
	key, _ := json.Marshal(EditArgs{Path: a.Path, Kind: a.Kind, Text: a.Text, OldText: a.OldText})
	value := strconv.FormatBool(exists)
	switch a.Kind {
	case EditAppend:
		value += "\x00" + lastLines(src, 3)
	case EditReplace:
		value += "\x00" + strconv.Itoa(bytes.Count(src, []byte(a.OldText)))
	}
	sum := sha256.Sum256(append(key, value...))
	return EditTool + ":" + a.Path + ":" + hex.EncodeToString(sum[:4]), hex.EncodeToString(sum[4:10])
}

// lastLines is the last n non-blank lines of src.
func lastLines(src []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(src), " \t\r\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// applyClientEdit re-validates a confirmed edit against the note as it is
// now: stale (with why) when the note changed where it points.
func applyClientEdit(it ChangeItem, cur edit.Current) (out []byte, stale string) {
	if err := checkEdit(it.Args); err != nil {
		return nil, "refused, nothing written: " + err.Error()
	}
	var a EditArgs
	json.Unmarshal(it.Args, &a)
	if _, base := editTarget(cur.Content, cur.Exists, a); base != it.Base {
		switch {
		case a.Kind == EditCreate:
			return nil, a.Path + " was created since it was proposed"
		case !cur.Exists:
			return nil, a.Path + " is gone"
		case a.Kind == EditReplace:
			return nil, fmt.Sprintf("old_text occurs %d times in %s now, not once", bytes.Count(cur.Content, []byte(a.OldText)), a.Path)
		}
		return nil, "the end of " + a.Path + " changed since it was proposed"
	}
	out, err := applyEdit(a, cur.Content, cur.Exists)
	if err != nil {
		return nil, err.Error()
	}
	return out, ""
}

// editAction is margin's words for a proposed edit.
func editAction(a EditArgs) string {
	lines := func(s string) string {
		n := strings.Count(strings.TrimRight(s, "\n"), "\n") + 1
		if n == 1 {
			return "1 line"
		}
		return strconv.Itoa(n) + " lines"
	}
	switch a.Kind {
	case EditCreate:
		return fmt.Sprintf("Create %s (%s)", a.Path, lines(a.Text))
	case EditAppend:
		return fmt.Sprintf("Append %s to %s", lines(a.Text), a.Path)
	}
	return fmt.Sprintf("Replace %s in %s", lines(a.OldText), a.Path)
}

// maxDiffLines bounds the diff a change set file shows of one item.
const maxDiffLines = 200

// unifiedDiff is what an item changes in the note at p, as a unified
// diff a person reads in the change set file, cut to maxDiffLines lines
// of hunk body.
func unifiedDiff(p string, before, after []byte) string {
	d := edit.Diff("a/"+p, "b/"+p, string(before), string(after), 3)
	var b strings.Builder
	lines := 0
	for i, l := range strings.SplitAfter(d, "\n") {
		switch {
		case i < 2 || strings.HasPrefix(l, "@@"):
			// A hunk header past the cut has nothing under it.
			if lines < maxDiffLines {
				b.WriteString(l)
			}
		case l != "":
			if lines++; lines <= maxDiffLines {
				b.WriteString(l)
			}
		}
	}
	if lines > maxDiffLines {
		fmt.Fprintf(&b, "… %d more lines of diff\n", lines-maxDiffLines)
	}
	return b.String()
}

// itemDiffs is what each of an agent's items would change in the task
// note at p as src has it, each on its own, by item id: the same diff a
// client's proposal shows. An item that would not apply to src (it is
// stale already) has none.
func itemDiffs(p string, src []byte, items []ChangeItem, taskRules note.Options) map[string]string {
	diffs := map[string]string{}
	for _, it := range items {
		if out, stale, err := applyItem(p, src, it, taskRules); err == nil && stale == "" {
			diffs[it.ID] = unifiedDiff(p, src, out)
		}
	}
	return diffs
}

// diffs is what each of items would change in the task note at task as
// it is now; none when the note cannot be read.
func (c *Changes) diffs(task string, items []ChangeItem) map[string]string {
	snap, err := c.v.Files.Read(task)
	if err != nil {
		return nil
	}
	return itemDiffs(task, snap.Content, items, c.v.Rules.TaskOptions())
}

// diffSection renders the diffs of a set's items below their lines, in
// a fence longer than any run of backticks in them, so that nothing in a
// diff reads as a checkbox line of the set.
func diffSection(items []ChangeItem, diffs map[string]string) string {
	var b strings.Builder
	for _, it := range items {
		d, ok := diffs[it.ID]
		if !ok || d == "" {
			continue
		}
		fence := strings.Repeat("`", max(3, longestRun(d, '`')+1))
		fmt.Fprintf(&b, "\n## What %s changes\n\n%sdiff\n%s%s\n", it.ID, fence, withNewline(d), fence)
	}
	return b.String()
}

func longestRun(s string, c byte) int {
	best, n := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			n++
			best = max(best, n)
		} else {
			n = 0
		}
	}
	return best
}

// yamlArgs is a client's edit in the set file's frontmatter: long texts
// are cut there, the diff below shows them.
func yamlArgs(tool string, args map[string]any) map[string]any {
	if tool != EditTool {
		return args
	}
	for _, k := range []string{"text", "old_text"} {
		if s, ok := args[k].(string); ok && utf8.RuneCountInString(s) > 200 {
			args[k] = string([]rune(s)[:200]) + fmt.Sprintf("… (%d characters; the diff shows the change)", utf8.RuneCountInString(s))
		}
	}
	return args
}

// isEdit reports whether the confirmed items are a client's edits, which
// apply to a note that may not exist yet (a create).
func isEdit(items []ChangeItem, confirm []int) bool {
	return len(confirm) > 0 && items[confirm[0]].Tool == EditTool
}

// applyEdits applies a client's confirmed edits to the note as Change
// found it, marking each stale that no longer fits; it returns nil when
// none applies, and each applied edit's part, so each can be undone alone.
func applyEdits(cur edit.Current, items []ChangeItem, confirm []int, applied *[]int) ([]byte, []edit.Part) {
	var (
		out   []byte
		parts []edit.Part
	)
	for _, i := range confirm {
		next, stale := applyClientEdit(items[i], cur)
		if stale != "" {
			items[i].Status, items[i].Detail = ItemStale, stale
			continue
		}
		before := cur.Content // nil: the edit creates the note
		if cur.Exists && before == nil {
			before = []byte{}
		}
		parts = append(parts, edit.Part{Item: items[i].ID, Before: before, After: next})
		out = next
		cur = edit.Current{Content: next, Exists: true, InEditor: cur.InEditor}
		*applied = append(*applied, i)
	}
	return out, parts
}
