package vault

import (
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/margin-md/margin/vault/note"
)

// readLocale sets the language the daily format reads names in: the
// configured one, else the one under which most of the daily notes
// already there parse (Obsidian writes names in the app's language, which
// its settings do not record), else English. It also warns about notes in
// the daily folder that look dated but are not daily notes: a wrong
// format or language hides every one of them.
func (r *Rules) readLocale(dir, configured string) {
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
			for _, name := range names {
				if _, ok := m.Parse(name); ok {
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
		if _, ok := r.Daily.Format.Parse(name); !ok && looksDated(name) {
			odd = append(odd, name+".md")
		}
	}
	if len(odd) > 0 {
		folder := r.Daily.Folder
		if folder == "" {
			folder = "the vault root"
		}
		warn("%d notes in %s look dated but are not daily notes in the format %s (locale %s), e.g. %s; set vault.locale to the language they are named in, or fix the format in .obsidian/daily-notes.json",
			len(odd), folder, r.Daily.Format, r.Daily.Format.Locale().Name, strings.Join(odd[:min(3, len(odd))], ", "))
	}
}

// dailyNames are the names (paths below the daily folder, without ".md")
// of the markdown files at the depth the daily format writes, leaving out
// hidden files, templates and margin's outputs.
func (r *Rules) dailyNames(dir string) []string {
	if r.Daily.Format.IsZero() {
		return nil
	}
	depth := strings.Count(r.Daily.Format.Format(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)), "/")
	root := filepath.Join(dir, filepath.FromSlash(r.Daily.Folder))
	skip := append([]string{r.OutputFolder}, r.TemplateFolders...)
	var names []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // an unreadable folder holds no names margin can read either
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		inVault := path.Join(r.Daily.Folder, rel)
		hidden := strings.HasPrefix(d.Name(), ".")
		if d.IsDir() {
			if hidden || strings.Count(rel, "/") >= depth || inAny(inVault, skip) {
				return filepath.SkipDir
			}
			return nil
		}
		if !hidden && d.Type().IsRegular() && strings.Count(rel, "/") == depth && strings.EqualFold(path.Ext(rel), ".md") {
			names = append(names, rel[:len(rel)-3])
		}
		return nil
	})
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
