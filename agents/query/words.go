package query

import (
	"maps"
	"slices"
	"strings"
	"unicode/utf8"
)

// A person asking about "restaurants" means the note that says
// "restaurant" too, and the index matches words as written. So the
// retriever searches an English noun in both numbers: each word of a
// question, and the last word of a keyword phrase ("bench presses" finds
// "bench press"), gets its other number as an alternative
// (index.Query.Expand). The rules are the plural's spelling, with no
// dictionary. A wrong guess mostly matches nothing ("movies" → "movy",
// searched beside "movie"), but may be another word ("news" → "new"):
// Question searches the words as written first.

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

// A Korean question ends in a verb with a question ending (만드나요:
// "make", politely asked) and holds a question word (어떻게, "how").
// The index finds Hangul as substrings (SPEC §3.2), so a question's
// words are searched by their character pairs, and the pairs of those
// (어떻, 떻게, 나요) matched every FAQ heading that asks "…어떻게 되나요?"
// before the notes the question is about. hangulStems drops a question's
// question words and cuts the question ending off its verbs. Particles
// stay: how-to headings write "노트를 캔버스에 추가하려면" as questions do,
// and their pairs find them.
func hangulStems(text string) string {
	fields := strings.Fields(text)
	out := fields[:0]
	for _, f := range fields {
		w := strings.TrimRight(f, "?!.,;:")
		if w == "" || strings.IndexFunc(w, func(r rune) bool { return r < 0xAC00 || r > 0xD7A3 }) >= 0 {
			out = append(out, f)
			continue
		}
		if hangulQuestionWords[w] {
			continue
		}
		for _, e := range hangulEndings { // longest first
			if strings.HasSuffix(w, e) {
				w = w[:len(w)-len(e)]
				break
			}
		}
		if utf8.RuneCountInString(w) >= 2 { // a verb of one syllable (되나요, 있어요) says nothing to search
			out = append(out, w)
		}
	}
	return strings.Join(out, " ")
}

var (
	// Question endings of a verb, longest first.
	hangulEndings = []string{"습니까", "인가요", "나요", "까요", "니까", "가요", "어요", "아요", "해요", "지요", "죠"}
	// Question and filler words, which any FAQ holds.
	hangulQuestionWords = map[string]bool{
		"어떻게": true, "어떤": true, "무엇": true, "무엇을": true, "무엇이": true, "무엇인가요": true, "뭐": true, "뭐가": true,
		"왜": true, "언제": true, "어디": true, "어디서": true, "어디에": true, "누가": true, "누구": true, "어느": true,
		"있나요": true, "있어요": true, "있습니까": true, "있을까요": true, "하나요": true, "할까요": true, "합니까": true,
		"되나요": true, "됩니까": true, "될까요": true, "하는": true, "할": true, "수": true, "그리고": true, "또는": true,
	}
)
