package watch

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"
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
// A glob is matched segment by segment with path.Match, and a "**" segment
// spans any number of segments, so "Archive/**" ignores Archive and all in
// it. As in .gitignore, a glob without a slash matches a name at any depth
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
		segs := strings.Split(rel, "/")
		for i, name := range segs {
			dir := isDir || i < len(segs)-1
			if strings.HasPrefix(name, ".") {
				return true
			}
			for _, r := range rules {
				if r.match(segs[:i+1], dir) {
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

// glob is one compiled user ignore glob.
type glob struct {
	segs    []string // the pattern split on "/"
	anyName bool     // no slash in the pattern: it matches a name at any depth
	dirOnly bool     // a trailing slash: it matches directories only
}

func compileGlob(pattern string) (glob, error) {
	p := filepath.ToSlash(pattern)
	var g glob
	if strings.HasSuffix(p, "/") {
		g.dirOnly = true
		p = strings.TrimRight(p, "/")
	}
	if strings.HasPrefix(p, "/") {
		p = strings.TrimLeft(p, "/")
	} else if !strings.Contains(p, "/") {
		g.anyName = true
	}
	if p == "" {
		return glob{}, fmt.Errorf("ignore glob %q: matches nothing", pattern)
	}
	g.segs = strings.Split(p, "/")
	for _, s := range g.segs {
		if _, err := path.Match(s, ""); err != nil {
			return glob{}, fmt.Errorf("ignore glob %q: %w", pattern, err)
		}
	}
	return g, nil
}

// match reports whether the path made of segs matches.
func (g glob) match(segs []string, isDir bool) bool {
	if g.dirOnly && !isDir {
		return false
	}
	if g.anyName {
		ok, _ := path.Match(g.segs[0], segs[len(segs)-1])
		return ok
	}
	return matchSegs(g.segs, segs)
}

func matchSegs(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := range len(name) + 1 {
				if matchSegs(pat[1:], name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], name[0]); !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}
