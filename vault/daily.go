package vault

import (
	"path"
	"strings"

	"github.com/margin-md/margin/vault/note"
)

// DailyFormat is where this vault keeps its daily notes and how it names
// them: .obsidian/daily-notes.json when present, else the options.
func (v *Vault) DailyFormat() note.DailyFormat { return v.parse.Daily }

// ParseOptions are the rules the index parses notes with, for a caller
// that parses a note itself (an editor's unsaved text).
func (v *Vault) ParseOptions() note.Options { return v.parse }

// DailyTemplate is the vault path of the note Obsidian creates new daily
// notes from: the template of the plugin that makes them (Periodic Notes
// or the core Daily notes), with ".md" added as Obsidian does, or "" when
// none is set. It is read on every call, so a template chosen while
// margin runs is used from then on.
func (v *Vault) DailyTemplate() (string, error) {
	s := readDailySettings(v.dir)
	t := strings.Trim(s.Template, "/")
	if t == "" {
		return "", s.Unread
	}
	if !strings.EqualFold(path.Ext(t), ".md") {
		t += ".md"
	}
	return t, nil
}
