package query

import (
	"maps"
	"slices"
	"strings"
)

// A person asking about "restaurants" means the note that says
// "restaurant" too, and the index matches words as written. So the
// retriever searches an English noun in both numbers: each word of a
// question, and the last word of a keyword phrase ("bench presses" finds
// "bench press"), gets its other number as an alternative
// (index.Query.Expand). The rules are the plural's spelling, with no
// dictionary; where they guess wrong ("movies" → "movy"), the guess
// matches nothing, and it is searched beside the right one ("movie").

// withOtherNumber returns expand with the other number of each phrase's
// last word added as an alternative of the phrase; expand itself is left
// as it is.
func withOtherNumber(expand map[string][]string, phrases []string) map[string][]string {
	out := make(map[string][]string, len(expand)+len(phrases))
	maps.Copy(out, expand)
	for _, p := range phrases {
		p = strings.ToLower(strings.TrimSpace(p))
		cut := strings.LastIndexByte(p, ' ') + 1
		if ws := otherNumber(p[cut:]); len(ws) > 0 {
			alts := slices.Clone(out[p]) // not expand's own
			for _, w := range ws {
				alts = append(alts, p[:cut]+w)
			}
			out[p] = alts
		}
	}
	return out
}

// otherNumber returns the singular of an English plural or the plural of
// a singular, or both readings' guesses where the spelling leaves a
// doubt. Words shorter than four letters, or not all of a to z, have none.
func otherNumber(w string) []string {
	n := len(w)
	if n < 4 || strings.IndexFunc(w, func(r rune) bool { return r < 'a' || r > 'z' }) >= 0 {
		return nil
	}
	switch {
	case strings.HasSuffix(w, "ies") && !strings.HasSuffix(w, "eies") && !strings.HasSuffix(w, "aies"):
		return []string{w[:n-3] + "y", w[:n-1]} // cities, movies
	case strings.HasSuffix(w, "es") && sibilant(w[:n-2]):
		return []string{w[:n-2], w[:n-1]} // boxes, caches
	case strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		return []string{w[:n-1]}
	case strings.HasSuffix(w, "y") && !strings.ContainsRune("aeiou", rune(w[n-2])):
		return []string{w[:n-1] + "ies"}
	case sibilant(w):
		return []string{w + "es"}
	}
	return []string{w + "s"}
}

// sibilant: the plural of w adds "es".
func sibilant(w string) bool {
	return strings.HasSuffix(w, "s") || strings.HasSuffix(w, "x") || strings.HasSuffix(w, "z") ||
		strings.HasSuffix(w, "ch") || strings.HasSuffix(w, "sh")
}
