package note

import (
	"path"
	"strings"
)

// LinkKey is the normalised form of a link target or note path under which
// the two match: surrounding space trimmed, the path cleaned (path.Clean, so
// "./a//b" is "a/b"), a leading "/" and a trailing ".md" (any case) removed,
// then lower-cased; inner slashes are kept.
//
// The index stores, for each note, key = LinkKey(path), name = the part of
// key after its last '/' and LinkKey of each alias. A link
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

// Wikilink is a link to the note at notePath (vault-relative) as Obsidian
// writes one: the path without its extension, which LinkKey resolves back.
func Wikilink(notePath string) string {
	return "[[" + strings.TrimSuffix(notePath, path.Ext(notePath)) + "]]"
}
