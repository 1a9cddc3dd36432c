package vault

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/margin-md/margin/vault/note"
)

// TestSilentDailySettingsMeanTheVaultRoot: where daily-notes.json says
// nothing, Obsidian keeps daily notes at the vault's root as YYYY-MM-DD;
// only a vault without the file gets margin's config.
func TestSilentDailySettingsMeanTheVaultRoot(t *testing.T) {
	for name, settings := range map[string]string{
		"no folder":    `{"template": "Templates/Day"}`,
		"empty folder": `{"folder": "", "format": ""}`,
		"slash":        `{"folder": "/"}`,
		"empty file":   "",
	} {
		t.Run(name, func(t *testing.T) {
			dir := writeVault(t, map[string]string{
				".obsidian/daily-notes.json": settings,
				"2026-11-22.md":              "## 07:30\nran\n",
				"Daily/2026-11-23.md":        "## 07:30\nran\n",
			})
			v := scanned(t, Options{Dir: dir})
			r := v.Rules()
			if r.Daily.Folder != "" || r.Daily.Format.String() != "YYYY-MM-DD" || !r.DailySettings || r.DailySource != ".obsidian/daily-notes.json" {
				t.Errorf("rules: folder %q, format %q, settings %v, source %q", r.Daily.Folder, r.Daily.Format, r.DailySettings, r.DailySource)
			}
			if k := kindOf(t, v, "2026-11-22.md"); k != note.KindDaily {
				t.Errorf("2026-11-22.md is a %s, want a daily note", k)
			}
			if k := kindOf(t, v, "Daily/2026-11-23.md"); k != note.KindNote {
				t.Errorf("Daily/2026-11-23.md is a %s, want a note", k)
			}
		})
	}
	t.Run("no settings", func(t *testing.T) {
		dir := writeVault(t, map[string]string{"Daily/2026-11-23.md": "## 07:30\nran\n"})
		v := scanned(t, Options{Dir: dir, DailyFolder: "Daily"})
		r := v.Rules()
		if r.Daily.Folder != "Daily" || r.DailySettings || !strings.Contains(r.DailySource, "no .obsidian/daily-notes.json") {
			t.Errorf("rules: folder %q, settings %v, source %q", r.Daily.Folder, r.DailySettings, r.DailySource)
		}
	})
}

// koreanVault is a vault whose daily notes Obsidian named in Korean
// (YYYY/MMM/YYYY-MM-DD: 2025/10월/2025-10-01), with one note named in
// English among them.
func koreanVault(t *testing.T) string {
	return writeVault(t, map[string]string{
		".obsidian/daily-notes.json": `{"folder": "", "format": "YYYY/MMM/YYYY-MM-DD"}`,
		"2025/10월/2025-10-01.md":     "## 07:30\n달리기\n",
		"2025/10월/2025-10-31.md":     "## 21:00\n독서\n",
		"2025/11월/2025-11-28.md":     "## 08:00\n산책\n",
		"2025/Nov/2025-11-03.md":     "## 08:00\nwalk\n",
		"2025/11월/회의.md":             "not dated\n",
		"Notes/2025 계획.md":           "a plan\n",
	})
}

func TestLocaleInferredFromTheDailyNotes(t *testing.T) {
	v := scanned(t, Options{Dir: koreanVault(t)})
	r := v.Rules()
	if got := r.Daily.Format.Locale().Name; got != "ko" || !strings.Contains(r.LocaleSource, "3 of 5") {
		t.Errorf("locale %s (%s), want ko inferred from 3 of 5 notes", got, r.LocaleSource)
	}
	for p, want := range map[string]string{"2025/10월/2025-10-01.md": "2025-10-01", "2025/10월/2025-10-31.md": "2025-10-31", "2025/11월/2025-11-28.md": "2025-11-28"} {
		m, err := v.Index().Note(context.Background(), p)
		if err != nil || m.Kind != note.KindDaily || m.Date != want {
			t.Errorf("%s: %+v, %v; want the daily note of %s", p, m, err, want)
		}
	}
	entries, err := v.Index().Entries(context.Background(), "2025-10-01", "2025-10-31")
	if err != nil || len(entries) != 2 {
		t.Errorf("entries of October: %+v, %v; want 2", entries, err)
	}
	if got := v.DailyFormat().Path(time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)); got != "2026/11월/2026-11-28.md" {
		t.Errorf("Path = %q, want 2026/11월/2026-11-28.md beside the others", got)
	}
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "1 note in the vault root looks dated") || !strings.Contains(r.Warnings[0], "2025/Nov/2025-11-03.md") || !strings.HasSuffix(r.Warnings[0], "fix the format in .obsidian/daily-notes.json") {
		t.Errorf("warnings %q: want the note named in English", r.Warnings)
	}
}

func TestConfiguredLocaleWins(t *testing.T) {
	dir := koreanVault(t)
	v := scanned(t, Options{Dir: dir, Locale: "en"})
	r := v.Rules()
	if r.Daily.Format.Locale().Name != "en" || r.LocaleSource != "vault.locale" {
		t.Errorf("locale %s (%s), want en from vault.locale", r.Daily.Format.Locale().Name, r.LocaleSource)
	}
	if k := kindOf(t, v, "2025/Nov/2025-11-03.md"); k != note.KindDaily {
		t.Errorf("2025/Nov/2025-11-03.md is a %s, want a daily note in English", k)
	}
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "3 notes in the vault root look dated") {
		t.Errorf("warnings %q: want the three Korean notes", r.Warnings)
	}
	v.Close()

	// The locale is part of the rules: without the override the same,
	// unchanged files are read again as Korean daily notes.
	v = scanned(t, Options{Dir: dir})
	if k := kindOf(t, v, "2025/10월/2025-10-01.md"); k != note.KindDaily {
		t.Errorf("after the locale changed, 2025/10월/2025-10-01.md is a %s, want a daily note", k)
	}
	bad := scanned(t, Options{Dir: koreanVault(t), Locale: "klingon"})
	if w := bad.Rules().Warnings; len(w) == 0 || !strings.Contains(w[0], `vault.locale "klingon"`) {
		t.Errorf("warnings %q: want the unknown locale named", w)
	}
}

// TestOlderDailyNotesWithoutTheirWeekday: a vault whose daily format
// gained the weekday after its first notes were named (Kalender/2023/
// 05-Mai/2023-05-11.md, then .../2024-10-03-Donnerstag.md) reads both as
// daily notes, names new ones by the format, and warns neither of them
// nor of a day's meeting notes; a note filed under the wrong month still
// gets the warning.
func TestOlderDailyNotesWithoutTheirWeekday(t *testing.T) {
	dir := writeVault(t, map[string]string{
		".obsidian/daily-notes.json":                          `{"folder": "Kalender", "format": "YYYY/MM-MMMM/YYYY-MM-DD-dddd"}`,
		"Kalender/2023/05-Mai/2023-05-11.md":                  "## 07:30\nLaufen\n",
		"Kalender/2023/05-Mai/2023-05-12.md":                  "## 07:30\nLesen\n",
		"Kalender/2024/10-Oktober/2024-10-03-Donnerstag.md":   "## 08:00\nArbeit\n",
		"Kalender/2023/07-Juli/2023-07-24 Treffen mit Ana.md": "Notizen\n",
		"Kalender/2023/08-August/2023-09-04 Jour fixe.md":     "falsch abgelegt\n",
	})
	v := scanned(t, Options{Dir: dir})
	r := v.Rules()
	for p, want := range map[string]string{
		"Kalender/2023/05-Mai/2023-05-11.md":                "2023-05-11",
		"Kalender/2024/10-Oktober/2024-10-03-Donnerstag.md": "2024-10-03",
	} {
		m, err := v.Index().Note(context.Background(), p)
		if err != nil || m.Kind != note.KindDaily || m.Date != want {
			t.Errorf("%s: %+v, %v; want the daily note of %s", p, m, err, want)
		}
	}
	if k := kindOf(t, v, "Kalender/2023/07-Juli/2023-07-24 Treffen mit Ana.md"); k != note.KindNote {
		t.Errorf("the meeting note is a %s, want a note", k)
	}
	if r.DailyOlder != "2 in the older format YYYY/MM-MMMM/YYYY-MM-DD" {
		t.Errorf("DailyOlder %q", r.DailyOlder)
	}
	if got := v.DailyFormat().Path(time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)); got != "Kalender/2026/11-November/2026-11-26-Donnerstag.md" {
		t.Errorf("a new daily note goes to %q, want the format's name", got)
	}
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "1 note in Kalender looks dated") || !strings.Contains(r.Warnings[0], "2023-09-04 Jour fixe.md") {
		t.Errorf("warnings %q: want only the note filed under the wrong month", r.Warnings)
	}
	entries, err := v.Index().Entries(context.Background(), "2023-05-01", "2024-12-31")
	if err != nil || len(entries) != 3 {
		t.Errorf("entries: %+v, %v; want the 3 of both formats", entries, err)
	}
}

// TestOlderDailyNotesTellTheLocale: a vault of only older notes, named
// without the weekday the format now adds, still tells its language by
// its month folders.
func TestOlderDailyNotesTellTheLocale(t *testing.T) {
	dir := writeVault(t, map[string]string{
		".obsidian/daily-notes.json":          `{"folder": "Kalender", "format": "YYYY/MM-MMMM/YYYY-MM-DD-dddd"}`,
		"Kalender/2023/05-Mai/2023-05-11.md":  "## 07:30\nLaufen\n",
		"Kalender/2023/03-März/2023-03-02.md": "## 07:30\nLesen\n",
	})
	v := scanned(t, Options{Dir: dir})
	if r := v.Rules(); r.Daily.Format.Locale().Name != "de" || len(r.Warnings) != 0 {
		t.Errorf("locale %s (%s), warnings %q; want de from the older notes", r.Daily.Format.Locale().Name, r.LocaleSource, r.Warnings)
	}
	if k := kindOf(t, v, "Kalender/2023/03-März/2023-03-02.md"); k != note.KindDaily {
		t.Errorf("the March note is a %s, want a daily note", k)
	}
}

// TestSettingsWarningsAreLoggedOnce: the rules' warnings are logged by the
// open that first finds them, not by every command after it; a change in
// them is logged again. Rules().Warnings holds them at every open.
func TestSettingsWarningsAreLoggedOnce(t *testing.T) {
	dir := koreanVault(t)
	logged := func(opts Options) string {
		var b strings.Builder
		opts.Dir, opts.Logger = dir, slog.New(slog.NewTextHandler(&b, &slog.HandlerOptions{Level: slog.LevelWarn}))
		v, err := Open(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(v.Rules().Warnings) != 1 {
			t.Errorf("warnings %q, want the one", v.Rules().Warnings)
		}
		v.Close()
		return b.String()
	}
	if got := logged(Options{}); !strings.Contains(got, "level=WARN") || !strings.Contains(got, "looks dated") {
		t.Errorf("the first open logged %q, want the warning", got)
	}
	if got := logged(Options{}); got != "" {
		t.Errorf("the second open logged %q, want nothing new", got)
	}
	if got := logged(Options{Locale: "en"}); !strings.Contains(got, "3 notes in the vault root look dated") {
		t.Errorf("an open with other warnings logged %q, want them", got)
	}
}
