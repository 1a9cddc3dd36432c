package watch

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// ObsidianFilters returns the rule of Obsidian's "Excluded files"
// (userIgnoreFilters in .obsidian/app.json): a filter written /like this/ is
// a regular expression searched in the vault path; any other filter
// excludes the paths that start with it, as Obsidian compares them. A
// filter that is not a valid expression is returned in bad and not used.
func ObsidianFilters(filters []string) (ignore func(rel string, isDir bool) bool, bad []string) {
	var (
		prefixes []string
		exprs    []*regexp.Regexp
	)
	for _, f := range filters {
		if len(f) > 2 && strings.HasPrefix(f, "/") && strings.HasSuffix(f, "/") {
			re, err := regexp.Compile(f[1 : len(f)-1])
			if err != nil {
				bad = append(bad, f)
				continue
			}
			exprs = append(exprs, re)
			continue
		}
		if f = strings.TrimLeft(filepath.ToSlash(f), "/"); f != "" {
			prefixes = append(prefixes, f)
		}
	}
	return func(rel string, isDir bool) bool {
		if isDir {
			rel += "/" // "Archive/" excludes the folder Archive
		}
		for _, p := range prefixes {
			if strings.HasPrefix(rel, p) {
				return true
			}
		}
		for _, re := range exprs {
			if re.MatchString(rel) {
				return true
			}
		}
		return false
	}, bad
}

// GitIgnore returns the rule of git's ignore files for the vault at dir
// when it lies in a git work tree, and false when it does not. It reads the
// .gitignore files of the vault's folders (each when a path below it is
// first asked about) and of the folders between the repository root and
// the vault, .git/info/exclude and the user's excludes file; as in git, a
// deeper file overrides a shallower one, the last matching line of a file
// wins, and a path in an ignored folder is ignored.
func GitIgnore(dir string) (func(rel string, isDir bool) bool, bool) {
	root, ok := workTree(dir)
	if !ok {
		return nil, false
	}
	g := &gitIgnore{dir: dir, files: map[string]*ignoreFile{}}
	// The vault's place in the repository: the files above it see its
	// paths with this prefix.
	up, _ := filepath.Rel(root, dir)
	up = filepath.ToSlash(up)
	if up == "." {
		up = ""
	}
	for _, name := range []string{excludesFile(root), filepath.Join(root, ".git", "info", "exclude")} {
		if f := readIgnoreFile(name); f != nil {
			g.above = append(g.above, scoped{file: f, prefix: up})
		}
	}
	segs := []string{}
	if up != "" {
		segs = strings.Split(up, "/")
	}
	for i := 0; i < len(segs); i++ {
		base := filepath.Join(root, filepath.FromSlash(strings.Join(segs[:i], "/")))
		if f := readIgnoreFile(filepath.Join(base, ".gitignore")); f != nil {
			g.above = append(g.above, scoped{file: f, prefix: strings.Join(segs[i:], "/")})
		}
	}
	return g.ignored, true
}

// excludesFile is the user's excludes file for the work tree at root, as
// git resolves core.excludesFile from all its config files; "" when git
// does not run. Asking git keeps margin from reading git's config or the
// environment itself. When the key is unset this is ~/.config/git/ignore,
// git's default unless XDG_CONFIG_HOME moves it.
func excludesFile(root string) string {
	out, err := exec.Command("git", "-C", root, "config", "--path", "--get", "--default", "~/.config/git/ignore", "core.excludesFile").Output()
	name := strings.TrimSpace(string(out))
	if err != nil || name == "" {
		return ""
	}
	if !filepath.IsAbs(name) {
		name = filepath.Join(root, name) // as git reads it from the top of the work tree
	}
	return name
}

// workTree finds the root of the git work tree holding dir: the nearest
// folder upward with a .git folder or file.
func workTree(dir string) (string, bool) {
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d, true
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", false
		}
		d = parent
	}
}

type gitIgnore struct {
	dir   string
	above []scoped // files outside the vault, shallowest first

	mu    sync.Mutex
	files map[string]*ignoreFile // by vault-relative folder; nil: none there
}

// scoped is an ignore file above the vault, which sees a vault path with
// prefix in front.
type scoped struct {
	file   *ignoreFile
	prefix string
}

type ignoreFile struct{ lines []ignoreLine }

type ignoreLine struct {
	glob   glob
	negate bool
}

// ignored reports whether git ignores the vault path rel: the path itself
// or any folder it is in.
func (g *gitIgnore) ignored(rel string, isDir bool) bool {
	if rel == "" {
		return false
	}
	for end := 0; end < len(rel); end++ {
		if next := strings.IndexByte(rel[end:], '/'); next >= 0 {
			end += next
		} else {
			end = len(rel)
		}
		if g.match(rel[:end], isDir || end < len(rel)) {
			return true
		}
	}
	return false
}

// match decides one vault path against every file in scope.
func (g *gitIgnore) match(p string, isDir bool) bool {
	ignored := false
	decide := func(f *ignoreFile, sub string) {
		for _, l := range f.lines {
			if l.glob.match(sub, isDir) {
				ignored = !l.negate
			}
		}
	}
	for _, s := range g.above {
		full := p
		if s.prefix != "" {
			full = s.prefix + "/" + p
		}
		decide(s.file, full)
	}
	// The vault's own folders, root first: each file sees the path below
	// its folder.
	for folder := 0; ; {
		if f := g.fileIn(strings.TrimSuffix(p[:folder], "/")); f != nil {
			decide(f, p[folder:])
		}
		next := strings.IndexByte(p[folder:], '/')
		if next < 0 {
			break
		}
		folder += next + 1
	}
	return ignored
}

func (g *gitIgnore) fileIn(folder string) *ignoreFile {
	g.mu.Lock()
	defer g.mu.Unlock()
	f, ok := g.files[folder]
	if !ok {
		f = readIgnoreFile(filepath.Join(g.dir, filepath.FromSlash(folder), ".gitignore"))
		g.files[folder] = f
	}
	return f
}

// readIgnoreFile parses a gitignore file; nil when there is none or it
// has no patterns. Lines git would reject are skipped, as git skips them.
func readIgnoreFile(name string) *ignoreFile {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil
	}
	var f ignoreFile
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if line == "" || line[0] == '#' {
			continue
		}
		// Trailing spaces are dropped unless escaped.
		for strings.HasSuffix(line, " ") && !strings.HasSuffix(line, "\\ ") {
			line = line[:len(line)-1]
		}
		var l ignoreLine
		switch {
		case strings.HasPrefix(line, "!"):
			l.negate, line = true, line[1:]
		case strings.HasPrefix(line, "\\!"), strings.HasPrefix(line, "\\#"):
			line = line[1:]
		}
		if line == "" || line == "/" {
			continue
		}
		g, err := compileGlob(literalBraces(line))
		if err != nil {
			continue
		}
		l.glob = g
		f.lines = append(f.lines, l)
	}
	if len(f.lines) == 0 {
		return nil
	}
	return &f
}

// literalBraces escapes the braces of a gitignore line, which git reads as
// themselves and doublestar as alternatives.
func literalBraces(line string) string {
	var b strings.Builder
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case c == '\\' && i+1 < len(line):
			b.WriteString(line[i : i+2])
			i++
		case c == '{' || c == '}':
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
