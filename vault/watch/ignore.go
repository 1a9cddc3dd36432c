package watch

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// DefaultIgnore returns the ignore rule of SPEC §3.1, for Options.Ignore.
//
// It ignores every hidden file and folder (a name starting with '.'), as
// Obsidian does, which takes in .git, .obsidian, .trash, .github; the
// state dir (vault-relative, as config vault.state_dir; "" for none); editor
// scratch files (*.swp, *.swx, *~, vim's 4913 probe, emacs's .#* locks);
// margin's own temp files (.margin-*.tmp); files that are not markdown
// (.md, any case) — directories are never ignored for their name's
// extension; and everything matched by globs.
//
// A glob is matched with doublestar: a "**" segment spans any number of
// folders, so "Archive/**" ignores Archive and all in it, and {a,b} is
// either. As in .gitignore, a glob without a slash matches a name at any depth
// ("*.excalidraw.md"), a leading slash anchors it at the vault root, and a
// trailing slash restricts it to directories. Anything inside an ignored
// directory is ignored.
func DefaultIgnore(stateDir string, globs []string) (func(rel string, isDir bool) bool, error) {
	excluded, err := Excluded(stateDir, globs)
	if err != nil {
		return nil, err
	}
	return func(rel string, isDir bool) bool {
		if excluded(rel, isDir) {
			return true
		}
		if isDir {
			return false
		}
		name := rel[strings.LastIndexByte(rel, '/')+1:]
		return isScratch(name) || !strings.EqualFold(path.Ext(name), ".md")
	}, nil
}

// Excluded is DefaultIgnore without its rules for file names (scratch
// files, files that are not markdown): what is not part of the vault at
// all, rather than files of the vault that are not notes.
func Excluded(stateDir string, globs []string) (func(rel string, isDir bool) bool, error) {
	if filepath.IsAbs(stateDir) {
		return nil, fmt.Errorf("state dir %q: must be relative to the vault", stateDir)
	}
	state := path.Clean(filepath.ToSlash(stateDir))
	if state == "." {
		state = ""
	}
	rules := make([]glob, 0, len(globs))
	for _, g := range globs {
		r, err := compileGlob(g)
		if err != nil {
			return nil, err
		}
		rules = append(rules, r)
	}

	return func(rel string, isDir bool) bool {
		if rel == "" {
			return false // the vault itself
		}
		if state != "" && (rel == state || strings.HasPrefix(rel, state+"/")) {
			return true
		}
		end := 0 // of the folder or file rel[:end] asked about
		for i, name := range strings.Split(rel, "/") {
			if i > 0 {
				end++ // the slash
			}
			end += len(name)
			dir := isDir || end < len(rel)
			if strings.HasPrefix(name, ".") {
				return true
			}
			for _, r := range rules {
				if r.match(rel[:end], dir) {
					return true
				}
			}
		}
		return false
	}, nil
}

// isScratch reports whether a file name is an editor's or margin's scratch
// file. Only ".#note.md" could pass for a note, but the list is kept whole so
// it reads as the spec does.
func isScratch(name string) bool {
	return strings.HasSuffix(name, ".swp") || strings.HasSuffix(name, ".swx") ||
		strings.HasSuffix(name, "~") || name == "4913" || strings.HasPrefix(name, ".#") ||
		(strings.HasPrefix(name, ".margin-") && strings.HasSuffix(name, ".tmp"))
}

// glob is one compiled ignore glob.
type glob struct {
	pattern string // doublestar's syntax, anchored at the vault root
	dirOnly bool   // a trailing slash: it matches directories only
}

func compileGlob(pattern string) (glob, error) {
	p := filepath.ToSlash(pattern)
	var g glob
	if strings.HasSuffix(p, "/") {
		g.dirOnly = true
		p = strings.TrimRight(p, "/")
	}
	if p == "" {
		return glob{}, fmt.Errorf("ignore glob %q: matches nothing", pattern)
	}
	if strings.HasPrefix(p, "/") {
		p = strings.TrimLeft(p, "/")
	} else if !strings.Contains(p, "/") {
		p = "**/" + p // a name at any depth
	}
	if !doublestar.ValidatePattern(p) {
		return glob{}, fmt.Errorf("ignore glob %q: %w", pattern, doublestar.ErrBadPattern)
	}
	g.pattern = p
	return g, nil
}

// match reports whether the vault path p matches.
func (g glob) match(p string, isDir bool) bool {
	return (isDir || !g.dirOnly) && doublestar.MatchUnvalidated(g.pattern, p)
}
