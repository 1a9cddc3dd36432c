package vault

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/margin-md/margin/vault/note"
)

// periodicVault is a vault whose daily notes the Periodic Notes plugin
// makes, in its folder and format, while a core daily-notes.json from
// before still names another folder and format.
func periodicVault(t *testing.T, files map[string]string) string {
	t.Helper()
	vault := map[string]string{
		".obsidian/daily-notes.json":        `{"folder": "daily", "format": "YYYY-MM-DD", "template": "Templates/Old day"}`,
		".obsidian/community-plugins.json":  `["obsidian-tasks-plugin", "periodic-notes"]`,
		"Daily notes/11-21-2026.md":         "## 07:30\nswam\n",
		"Daily notes/11-22-2026.md":         "## 08:00\nread\n",
		"daily/2026-11-20.md":               "## 09:00\nfrom before\n",
		"Templates/Day.md":                  "# {{date}}\n",
		"Templates/Old day.md":              "# old {{date}}\n",
		".obsidian/plugins/other/data.json": `{"daily": {"enabled": true, "folder": "nope"}}`,
	}
	for p, s := range files {
		vault[p] = s
	}
	return writeVault(t, vault)
}

func TestPeriodicNotesMakeTheDailyNotes(t *testing.T) {
	const daily = `"enabled": true, "folder": "Daily notes/", "format": "MM-DD-YYYY"`
	for name, files := range map[string]map[string]string{
		"core off in a list, daily section": {
			".obsidian/core-plugins.json":                `["file-explorer", "templates"]`,
			".obsidian/plugins/periodic-notes/data.json": `{"daily": {` + daily + `, "template": "Templates/Day"}, "weekly": {"enabled": true, "folder": "Weekly", "format": "gggg-[W]ww"}}`,
		},
		"core off in an object, calendar sets": {
			".obsidian/core-plugins.json": `{"file-explorer": true, "daily-notes": false}`,
			".obsidian/plugins/periodic-notes/data.json": `{"activeCalendarSet": "Work", "calendarSets": [` +
				`{"id": "Default", "day": {"enabled": true, "folder": "elsewhere", "format": "YYYY"}},` +
				`{"id": "Work", "day": {` + daily + `, "templatePath": "Templates/Day.md"}}]}`,
		},
		"core on, first releases' settings": {
			".obsidian/core-plugins.json":                `{"daily-notes": true}`,
			".obsidian/plugins/periodic-notes/data.json": `{"folder": "Daily notes", "format": "MM-DD-YYYY", "template": "Templates/Day"}`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			v := scanned(t, Options{Dir: periodicVault(t, files)})
			r := v.Rules()
			if r.Daily.Folder != "Daily notes" || r.Daily.Format.String() != "MM-DD-YYYY" || r.DailySource != ".obsidian/plugins/periodic-notes/data.json" || !r.DailySettings {
				t.Errorf("rules: folder %q, format %q, source %q, settings %v", r.Daily.Folder, r.Daily.Format, r.DailySource, r.DailySettings)
			}
			st, err := v.Status(context.Background())
			if err != nil || st.DailyNotes != 2 || len(st.Warnings) != 0 || r.DailyUnseen != "" {
				t.Errorf("status %+v, %v; unseen %q: want the 2 daily notes of Periodic Notes and no warning", st, err, r.DailyUnseen)
			}
			if k := kindOf(t, v, "daily/2026-11-20.md"); k != note.KindNote {
				t.Errorf("a note in the core plugin's folder is a %s, want a note", k)
			}
			if tpl, err := v.DailyTemplate(); tpl != "Templates/Day.md" || err != nil {
				t.Errorf("DailyTemplate = %q, %v; want Periodic Notes' template", tpl, err)
			}
		})
	}
}

// The core plugin's settings hold when Periodic Notes is off or does not
// make daily notes.
func TestPeriodicNotesWithoutDailyNotes(t *testing.T) {
	for name, files := range map[string]map[string]string{
		"daily notes off": {
			".obsidian/plugins/periodic-notes/data.json": `{"daily": {"enabled": false, "folder": "Daily notes", "format": "MM-DD-YYYY"}, "weekly": {"enabled": true}}`,
		},
		"plugin off": {
			".obsidian/community-plugins.json":           `["obsidian-tasks-plugin"]`,
			".obsidian/plugins/periodic-notes/data.json": `{"daily": {"enabled": true, "folder": "Daily notes", "format": "MM-DD-YYYY"}}`,
		},
		"no settings yet": {},
	} {
		t.Run(name, func(t *testing.T) {
			v := scanned(t, Options{Dir: periodicVault(t, files)})
			r := v.Rules()
			if r.Daily.Folder != "daily" || r.DailySource != ".obsidian/daily-notes.json" {
				t.Errorf("rules: folder %q, source %q; want the core plugin's", r.Daily.Folder, r.DailySource)
			}
			if tpl, err := v.DailyTemplate(); tpl != "Templates/Old day.md" || err != nil {
				t.Errorf("DailyTemplate = %q, %v; want the core plugin's template", tpl, err)
			}
		})
	}
}

// A core daily-notes.json whose plugin is off is left over: margin's
// config places daily notes, as in a vault without the settings, and the
// notes the old settings name are reported, not silently lost.
func TestLeftOverCoreDailySettings(t *testing.T) {
	for name, core := range map[string]string{
		"list without daily-notes": `["file-explorer"]`,
		"daily-notes false":        `{"file-explorer": true, "daily-notes": false}`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := writeVault(t, map[string]string{
				".obsidian/core-plugins.json": core,
				".obsidian/daily-notes.json":  `{"folder": "Journal", "format": "DD.MM.YYYY", "template": "Templates/Day"}`,
				"Journal/21.11.2026.md":       "## 07:30\nswam\n",
				"Journal/22.11.2026.md":       "## 08:00\nread\n",
				"Templates/Day.md":            "# {{date}}\n",
			})
			v := scanned(t, Options{Dir: dir, DailyFolder: "Log"})
			r := v.Rules()
			if r.Daily.Folder != "Log" || r.DailySettings || !strings.Contains(r.DailySource, "the core Daily notes plugin is off in .obsidian/core-plugins.json") {
				t.Errorf("rules: folder %q, settings %v, source %q", r.Daily.Folder, r.DailySettings, r.DailySource)
			}
			st, _ := v.Status(context.Background())
			if st.DailyNotes != 0 || len(st.Warnings) != 1 || !strings.Contains(st.Warnings[0], "2 notes in Journal are named in the format of the left-over .obsidian/daily-notes.json (DD.MM.YYYY), e.g. 21.11.2026.md, 22.11.2026.md") {
				t.Errorf("status %+v: want the notes the left-over settings name reported", st)
			}
			if !strings.Contains(r.DailyUnseen, "2 notes in Journal") {
				t.Errorf("unseen %q: no daily note is found, and the left-over settings name 2", r.DailyUnseen)
			}
			if tpl, err := v.DailyTemplate(); tpl != "" || err != nil {
				t.Errorf("DailyTemplate = %q, %v; want none: the plugin is off", tpl, err)
			}
		})
	}
	t.Run("daily notes found as well", func(t *testing.T) {
		dir := writeVault(t, map[string]string{
			".obsidian/core-plugins.json": `["file-explorer"]`,
			".obsidian/daily-notes.json":  `{"folder": "Journal", "format": "DD.MM.YYYY"}`,
			"Journal/21.11.2026.md":       "## 07:30\nswam\n",
			"Daily/2026-11-22.md":         "## 08:00\nread\n",
		})
		v := scanned(t, Options{Dir: dir})
		if st, _ := v.Status(context.Background()); st.DailyNotes != 1 || len(st.Warnings) != 1 || v.Rules().DailyUnseen != "" {
			t.Errorf("status %+v, unseen %q: want the left-over notes reported, without saying no daily note is found", st, v.Rules().DailyUnseen)
		}
	})
}

// A daily folder whose dated notes none parse: the rules say the daily
// notes go unseen.
func TestDailyNotesThatAllGoUnseen(t *testing.T) {
	dir := writeVault(t, map[string]string{
		".obsidian/daily-notes.json": `{"folder": "Daily", "format": "YYYY-MM-DD"}`,
		"Daily/21.11.2026.md":        "## 07:30\nswam\n",
		"Daily/22.11.2026.md":        "## 08:00\nread\n",
		"Daily/Ideas.md":             "not dated\n",
	})
	v := scanned(t, Options{Dir: dir})
	if got := v.Rules().DailyUnseen; got != "none of the 2 notes in Daily that look dated is a daily note under these rules" {
		t.Errorf("unseen %q", got)
	}
}

func TestBrokenPluginSettingsAreWarnings(t *testing.T) {
	dir := writeVault(t, map[string]string{
		".obsidian/core-plugins.json":                "daily-notes",
		".obsidian/community-plugins.json":           `["periodic-notes"]`,
		".obsidian/plugins/periodic-notes/data.json": `{"daily": `,
		".obsidian/daily-notes.json":                 `{"folder": "Journal", "template": "Templates/Day"}`,
	})
	v := scanned(t, Options{Dir: dir})
	st, _ := v.Status(context.Background())
	if len(st.Warnings) != 2 || !strings.Contains(st.Warnings[0], ".obsidian/core-plugins.json") || !strings.Contains(st.Warnings[1], ".obsidian/plugins/periodic-notes/data.json: unexpected end of JSON input; its settings are not used") {
		t.Errorf("warnings %q: want both files named", st.Warnings)
	}
	// Periodic Notes' daily settings cannot be read; the core plugin's,
	// still on, place the notes, and its template is used.
	if r := v.Rules(); r.Daily.Folder != "Journal" {
		t.Errorf("folder %q", r.Daily.Folder)
	}
	if tpl, err := v.DailyTemplate(); tpl != "Templates/Day.md" || err != nil {
		t.Errorf("DailyTemplate = %q, %v", tpl, err)
	}
}

// The TaskNotes plugin's task folder and marks add to the configured
// task folders while the plugin is on.
func TestTaskNotesFindTasks(t *testing.T) {
	notes := map[string]string{
		"Tasks/Ship.md":                   "# Ship\n",
		"TaskNotes/Tasks/Call plumber.md": "---\nstatus: open\n---\n",
		"Work/Tasks/Renew passport.md":    "---\nstatus: open\n---\n",
		"Notes/Errand.md":                 "---\ntags: [todo/errand]\n---\n",
		"Notes/Chore.md":                  "---\ncategory: \"[[Task]]\"\n---\n",
		"Notes/Idea.md":                   "---\ntags: [idea]\n---\n",
	}
	tests := []struct {
		name     string
		settings map[string]string
		tasks    []string
		folders  string
	}{
		{name: "plugin off", settings: map[string]string{
			".obsidian/plugins/tasknotes/data.json": `{"tasksFolder": "Work/Tasks", "taskTag": "todo"}`,
		}, tasks: []string{"Tasks/Ship.md"}, folders: "Tasks"},
		{name: "defaults", settings: map[string]string{
			".obsidian/community-plugins.json": `["tasknotes"]`,
		}, tasks: []string{"TaskNotes/Tasks/Call plumber.md", "Tasks/Ship.md"}, folders: "Tasks TaskNotes/Tasks"},
		{name: "folder and tag", settings: map[string]string{
			".obsidian/community-plugins.json":      `["tasknotes"]`,
			".obsidian/plugins/tasknotes/data.json": `{"tasksFolder": "/Work/Tasks/", "taskTag": "#todo", "taskIdentificationMethod": "tag"}`,
		}, tasks: []string{"Notes/Errand.md", "Tasks/Ship.md", "Work/Tasks/Renew passport.md"}, folders: "Tasks Work/Tasks"},
		{name: "property, folder the vault root", settings: map[string]string{
			".obsidian/community-plugins.json":      `["tasknotes"]`,
			".obsidian/plugins/tasknotes/data.json": `{"tasksFolder": "", "taskIdentificationMethod": "property", "taskPropertyName": "category", "taskPropertyValue": "[[Task]]"}`,
		}, tasks: []string{"Notes/Chore.md", "Tasks/Ship.md"}, folders: "Tasks"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{}
			for p, s := range notes {
				files[p] = s
			}
			for p, s := range tt.settings {
				files[p] = s
			}
			v := scanned(t, Options{Dir: writeVault(t, files)})
			tasks, err := v.Index().Tasks(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, task := range tasks {
				got = append(got, task.Path)
			}
			slices.Sort(got)
			if strings.Join(got, ", ") != strings.Join(tt.tasks, ", ") {
				t.Errorf("tasks %q, want %q", got, tt.tasks)
			}
			if r := v.Rules(); strings.Join(r.TaskFolders, " ") != tt.folders {
				t.Errorf("task folders %q, want %s", r.TaskFolders, tt.folders)
			}
		})
	}
}

// Turning TaskNotes on changes which notes are tasks: the next start
// reads every note again.
func TestTaskNotesSettingsReclassify(t *testing.T) {
	dir := writeVault(t, map[string]string{
		"Notes/Errand.md":                       "---\ntags: [todo]\n---\n",
		".obsidian/plugins/tasknotes/data.json": `{"taskTag": "todo", "tasksFolder": "Tasks"}`, // only the tag adds to the rules
	})
	v := scanned(t, Options{Dir: dir})
	before := v.Rules().Fingerprint()
	if k := kindOf(t, v, "Notes/Errand.md"); k != note.KindNote {
		t.Fatalf("before: %s", k)
	}
	v.Close()
	if err := os.WriteFile(filepath.Join(dir, ".obsidian", "community-plugins.json"), []byte(`["tasknotes"]`), 0o644); err != nil {
		t.Fatal(err)
	}
	v = scanned(t, Options{Dir: dir})
	if k := kindOf(t, v, "Notes/Errand.md"); k != note.KindTask || v.Rules().Fingerprint() == before {
		t.Errorf("after TaskNotes was turned on: %s; want a task, read again", k)
	}
}

func TestFingerprintCoversTaskMarks(t *testing.T) {
	base := Rules{TaskFolders: []string{"Tasks"}}
	for name, r := range map[string]Rules{
		"tag":      {TaskFolders: []string{"Tasks"}, TaskTags: []string{"todo"}},
		"property": {TaskFolders: []string{"Tasks"}, TaskProperty: note.TaskProperty{Name: "isTask", Value: "true"}},
	} {
		if r.Fingerprint() == base.Fingerprint() {
			t.Errorf("%s: the fingerprint does not change with TaskNotes' %s", name, name)
		}
	}
}

func TestFingerprintOfNoIgnoreGlobs(t *testing.T) {
	if none, empty := (Rules{}).Fingerprint(), (Rules{Ignore: []string{}}).Fingerprint(); none != empty {
		t.Errorf("no ignore globs as nil: %s, as []: %s; want one fingerprint, or each reindexes the other's vault", none, empty)
	}
	if (Rules{}).Fingerprint() == (Rules{Ignore: []string{"Archive/**"}}).Fingerprint() {
		t.Error("the fingerprint does not change with an ignore glob")
	}
}

func TestBrokenPluginListIsOneWarning(t *testing.T) {
	dir := writeVault(t, map[string]string{
		".obsidian/community-plugins.json":      `{"tasknotes": true}`,
		".obsidian/plugins/tasknotes/data.json": `{"tasksFolder": "Work"}`,
	})
	v := scanned(t, Options{Dir: dir})
	if w := v.Rules().Warnings; len(w) != 1 || !strings.HasPrefix(w[0], ".obsidian/community-plugins.json: json: cannot unmarshal object") {
		t.Errorf("warnings %q: want the list named once", w)
	}
}
