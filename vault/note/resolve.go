package note

import (
	"path"
	"strings"
)

// Ref is what link resolution needs to know of a note.
type Ref struct {
	Path    string // vault-relative, forward slashes
	Aliases []string
}

// Resolver resolves link targets to note paths the way Obsidian does. It is
// immutable and safe for concurrent use; build a new one when notes change.
type Resolver struct {
	byPath  map[string][]string // LinkKey(path) → paths
	byName  map[string][]string // last element of LinkKey(path) → paths
	byAlias map[string][]string // LinkKey(alias) → paths
}

// NewResolver indexes notes for Resolve.
func NewResolver(notes []Ref) *Resolver {
	r := &Resolver{
		byPath:  make(map[string][]string, len(notes)),
		byName:  make(map[string][]string, len(notes)),
		byAlias: make(map[string][]string),
	}
	for _, n := range notes {
		key := LinkKey(n.Path)
		r.byPath[key] = append(r.byPath[key], n.Path)
		name := key[strings.LastIndexByte(key, '/')+1:]
		r.byName[name] = append(r.byName[name], n.Path)
		for _, a := range n.Aliases {
			if a := LinkKey(a); a != "" {
				r.byAlias[a] = append(r.byAlias[a], n.Path)
			}
		}
	}
	return r
}

// LinkKey is the normalised form of a link target or note path under which
// the two match: surrounding space trimmed, the path cleaned (path.Clean, so
// "./a//b" is "a/b"), a leading "/" and a trailing ".md" (any case) removed,
// then lower-cased; inner slashes are kept.
//
// An index without a Resolver stores, for each note, key = LinkKey(path),
// name = the part of key after its last '/' and LinkKey of each alias. A link
// with k = LinkKey(Link.Target) from a note in folder dir resolves, in this
// order, to the note whose key is k; to the note whose key is
// LinkKey(path.Join(dir, Link.Target)); to the one note whose name is k (when
// k has no '/') or whose key ends in "/"+k; to the one note with an alias k.
// Where several notes match a step, the one in dir wins, and with none or
// several in dir the link is unresolved. An empty Target links the note itself.
func LinkKey(target string) string {
	k := strings.TrimSpace(target)
	if k == "" {
		return ""
	}
	k = strings.TrimPrefix(path.Clean(k), "/")
	if len(k) >= 3 && strings.EqualFold(k[len(k)-3:], ".md") {
		k = k[:len(k)-3]
	}
	if k == "." {
		return ""
	}
	return strings.ToLower(k)
}

// Resolve returns the path of the note that target, written in the note at
// from, links to. See LinkKey for the rules.
func (r *Resolver) Resolve(from, target string) (string, bool) {
	key := LinkKey(target)
	if key == "" {
		return from, from != ""
	}
	dir := path.Dir(from)
	if p, ok := pick(r.byPath[key], dir, target); ok {
		return p, true
	}
	if dir != "." {
		if p, ok := pick(r.byPath[LinkKey(path.Join(dir, target))], dir, ""); ok {
			return p, true
		}
	}
	name := key[strings.LastIndexByte(key, '/')+1:]
	cands := r.byName[name]
	if name != key {
		var suffixed []string
		for _, c := range cands {
			if ck := LinkKey(c); ck == key || strings.HasSuffix(ck, "/"+key) {
				suffixed = append(suffixed, c)
			}
		}
		cands = suffixed
	}
	if p, ok := pick(cands, dir, ""); ok {
		return p, true
	}
	return pick(r.byAlias[key], dir, "")
}

// pick chooses among the notes one step matched: the only one, else the one
// spelled exactly as target (when the vault holds "A.md" and "a.md"), else
// the only one in the linking note's folder.
func pick(cands []string, dir, target string) (string, bool) {
	switch len(cands) {
	case 0:
		return "", false
	case 1:
		return cands[0], true
	}
	if target = strings.TrimPrefix(strings.TrimSpace(target), "/"); target != "" {
		for _, c := range cands {
			if c == target || strings.TrimSuffix(c, ".md") == target {
				return c, true
			}
		}
	}
	found := ""
	for _, c := range cands {
		if path.Dir(c) == dir {
			if found != "" {
				return "", false
			}
			found = c
		}
	}
	return found, found != ""
}
