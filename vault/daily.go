package vault

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
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
// notes from (daily-notes.json's "template", with ".md" added as Obsidian
// does), or "" when none is configured. It is read on every call, so a
// template chosen while margin runs is used from then on.
func (v *Vault) DailyTemplate() (string, error) {
	data, err := os.ReadFile(filepath.Join(v.dir, ".obsidian", "daily-notes.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading daily-notes.json: %w", err)
	}
	var cfg struct {
		Template string `json:"template"`
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		return "", nil
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return "", fmt.Errorf("parsing daily-notes.json: %w", err)
	}
	t := strings.Trim(strings.TrimSpace(cfg.Template), "/")
	if t == "" {
		return "", nil
	}
	if !strings.EqualFold(path.Ext(t), ".md") {
		t += ".md"
	}
	return t, nil
}
