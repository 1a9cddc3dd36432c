package vault

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/margin-md/margin/vault/note"
)

// readLocale sets the language the daily format reads names in: the
// configured one, else the one under which most of the daily notes
// already there parse (Obsidian writes names in the app's language, which
// its settings do not record), else English. It also warns about notes in
// the daily folder that look dated but are not daily notes: a wrong
// format or language hides every one of them. It returns how many notes
// in the daily folder are daily notes under the rules.
func (r *Rules) readLocale(dir, configured string) (found int) {
	warn := func(format string, args ...any) { r.Warnings = append(r.Warnings, fmt.Sprintf(format, args...)) }
	r.LocaleSource = "the default"
	if configured != "" {
		if l, ok := note.LookupLocale(configured); ok {
			r.Daily.Format, r.LocaleSource = r.Daily.Format.In(l), "vault.locale"
		} else {
			warn("vault.locale %q is not a language margin knows (%s); daily notes are read in English", configured, strings.Join(note.LocaleNames(), ", "))
		}
	}
	names := r.dailyNames(dir)
	if configured == "" && r.Daily.Format.Localized() {
		best, most := note.English, 0
		for _, l := range note.Locales() {
			n := 0
			m := r.Daily.Format.In(l)
			older, _ := m.WithoutWeekday() // zero when m has no weekday: parses nothing
			for _, name := range names {
				if _, ok := m.Parse(name); ok {
					n++
				} else if _, ok := older.Parse(name); ok {
					n++
				}
			}
			if n > most {
				best, most = l, n
			}
		}
		r.Daily.Format = r.Daily.Format.In(best)
		if most > 0 {
			r.LocaleSource = fmt.Sprintf("inferred: %d of %d notes in the daily folder are named in it", most, len(names))
		}
	}
	var odd []string
	for _, name := range names {
		if _, ok := r.Daily.Format.Parse(name); ok {
			found++
		} else if looksDated(name) {
			odd = append(odd, name)
		}
	}
	odd, found = r.readOlder(odd, found)
	odd = slices.DeleteFunc(odd, r.namedAfterADay)
	if len(odd) > 0 {
		for i := range odd {
			odd[i] += ".md"
		}
		slices.Sort(odd)
		folder := folderName(r.Daily.Folder)
		if found == 0 {
			r.DailyUnseen = fmt.Sprintf("none of the %d notes in %s that look dated is a daily note under these rules", len(odd), folder)
		}
		settings := "vault.daily_format"
		if r.DailySettings {
			settings = r.DailySource
		}
		what := "notes in %s look dated but are not daily notes"
		if len(odd) == 1 {
			what = "note in %s looks dated but is not a daily note"
		}
		warn("%d "+fmt.Sprintf(what, folder)+" in the format %s (locale %s), e.g. %s; if they are daily notes, set vault.locale to the language they are named in, or fix the format in %s",
			len(odd), r.Daily.Format, r.Daily.Format.Locale().Name, strings.Join(odd[:min(3, len(odd))], ", "), settings)
	}
	return found
}

// readOlder takes the daily format without its weekday as an older
// format of the folder's daily notes when some of the dated names that
// are not daily notes are named in it: people add the weekday to a
// format years into a vault, and its earlier notes keep their names. It
// returns the names still not daily notes, and how many are.
func (r *Rules) readOlder(odd []string, found int) ([]string, int) {
	older, ok := r.Daily.Format.WithoutWeekday()
	if !ok || len(odd) == 0 {
		return odd, found
	}
	rest := odd[:0]
	n := 0
	for _, name := range odd {
		if _, ok := older.Parse(name); ok {
			n++
			continue
		}
		rest = append(rest, name)
	}
	if n > 0 {
		r.Daily.Older = []note.Moment{older}
		r.DailyOlder = fmt.Sprintf("%d in the older format %s", n, older)
	}
	return rest, found + n
}

// namedAfterADay reports whether name is a day's name and more, after a
// space ("2023-07-24 Meeting with Ana", "10-14-2025 2"): a note of that
// day, not a daily note in some other format or language.
func (r *Rules) namedAfterADay(name string) bool {
	i := strings.LastIndexByte(name, '/') + 1
	j := strings.IndexByte(name[i:], ' ')
	if j <= 0 {
		return false
	}
	day := name[:i+j]
	if _, ok := r.Daily.Format.Parse(day); ok {
		return true
	}
	for _, m := range r.Daily.Older {
		if _, ok := m.Parse(day); ok {
			return true
		}
	}
	return false
}

// staleDaily speaks of the daily notes named by the settings of a core
// Daily notes plugin that is off, which neither Obsidian nor margin reads:
// a vault's daily notes are often still there, and invisible to margin.
func (r *Rules) staleDaily(dir string, stale dailySettings, found int) {
	format := stale.Format
	if format == "" {
		format = "YYYY-MM-DD"
	}
	m, err := note.ParseMoment(format)
	if err != nil {
		return // a format margin cannot read names no note it could count
	}
	old := *r
	old.Daily = note.DailyFormat{Folder: stale.Folder, Format: m.In(r.Daily.Format.Locale())}
	if strings.EqualFold(old.Daily.Folder, r.Daily.Folder) && old.Daily.Format.String() == r.Daily.Format.String() {
		return // the config reads them as the settings did
	}
	var named []string
	for _, name := range old.dailyNames(dir) {
		if _, ok := old.Daily.Format.Parse(name); ok {
			named = append(named, name+".md")
		}
	}
	if len(named) == 0 {
		return
	}
	slices.Sort(named)
	msg := fmt.Sprintf("%d notes in %s are named in the format of the left-over %s (%s), e.g. %s; the core Daily notes plugin is off in %s, so Obsidian does not take them for daily notes, and margin looks for daily notes where vault.daily_folder and vault.daily_format say (%s in %s)",
		len(named), folderName(stale.Folder), coreDailySettings, format, strings.Join(named[:min(3, len(named))], ", "), corePluginsSettings, r.Daily.Format, folderName(r.Daily.Folder))
	r.Warnings = append(r.Warnings, msg+"; turn the Daily notes plugin back on, or set vault.daily_folder and vault.daily_format to match them")
	if found == 0 {
		r.DailyUnseen = fmt.Sprintf("%d notes in %s are named in the format of the left-over %s", len(named), folderName(stale.Folder), coreDailySettings)
	}
}

func folderName(folder string) string {
	if folder == "" {
		return "the vault root"
	}
	return folder
}

// dailyNames are the names (paths below the daily folder, without ".md")
// of the markdown files at the depth the daily format writes, leaving out
// hidden files, templates and margin's outputs, in no order. It runs at
// every open, over a folder that may hold thousands of notes, so it reads
// each folder once, unsorted, and builds no path it does not keep.
func (r *Rules) dailyNames(dir string) []string {
	if r.Daily.Format.IsZero() {
		return nil
	}
	depth := strings.Count(r.Daily.Format.Format(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)), "/")
	skip := append([]string{r.OutputFolder}, r.TemplateFolders...)
	var names []string
	var walk func(rel string, level int)
	walk = func(rel string, level int) {
		f, err := os.Open(filepath.Join(dir, filepath.FromSlash(r.Daily.Folder), filepath.FromSlash(rel)))
		if err != nil {
			return // an unreadable folder holds no names margin can read either
		}
		entries, _ := f.ReadDir(-1)
		f.Close()
		for _, d := range entries {
			name := d.Name()
			if strings.HasPrefix(name, ".") {
				continue
			}
			sub := name
			if rel != "" {
				sub = rel + "/" + name
			}
			switch {
			case d.IsDir():
				if level < depth && !inAny(path.Join(r.Daily.Folder, sub), skip) {
					walk(sub, level+1)
				}
			case level == depth && d.Type().IsRegular() && strings.EqualFold(path.Ext(name), ".md"):
				names = append(names, sub[:len(sub)-3])
			}
		}
	}
	walk("", 0)
	return names
}

func inAny(p string, folders []string) bool {
	for _, f := range folders {
		if f != "" && (strings.EqualFold(p, f) || len(p) > len(f) && p[len(f)] == '/' && strings.EqualFold(p[:len(f)], f)) {
			return true
		}
	}
	return false
}

// datedName is a name that starts with a number and holds a year: what a
// daily note's name looks like in any format.
var datedName = regexp.MustCompile(`(?:^|/)\d[^/]*$`)
var yearIn = regexp.MustCompile(`(?:19|20)\d\d`)

func looksDated(name string) bool { return datedName.MatchString(name) && yearIn.MatchString(name) }
