package index

import (
	"slices"
	"strings"
	"sync"
	"unicode"
)

// A question typed into the search ("how do I link two notes?") finds
// nothing when every word must match: "how", "do" and "I" are in few notes,
// or in all. Auto mode reads such a query as a question: it drops the stop
// words of the query's language and ranks every note that holds any of the
// rest, first those that hold them as typed (the phrase from the first
// to the last of them), then by how many of them they hold, then by bm25.
// A short keyword query stays an all-words search.

// question is query text read as a question.
type question struct {
	// words are the words to rank by, each as matchExpr reads one word:
	// a spaced word, a quoted phrase, part of an unspaced run, or a
	// key:value filter.
	words []string
	// phrase is the query's text from its first to its last word, stop
	// words between included; "" when that is a single word.
	phrase string
}

// unit is one word of a query as asQuestion weighs it.
type unit struct {
	text       string // as matchExpr reads it
	start, end int    // byte range in the query text
	stop       bool
}

// asQuestion reads text as a question, or returns nil for a keyword query:
// one holding no stop word of its language and fewer than four words, or
// too short to be a question (fewer than three words, unless it ends with
// a question mark). Quoted phrases, prefixes (word*), words with symbols
// and key:value filters are never stop words.
func asQuestion(text string) *question {
	trimmed := strings.TrimRightFunc(text, unicode.IsSpace)
	asked := strings.HasSuffix(trimmed, "?") || strings.HasSuffix(trimmed, "？")
	text = strings.TrimRight(trimmed, "?？")
	out := splitAtStops(unitsOf(text))
	content, stopped := 0, 0
	first, last := -1, -1
	for i, u := range out {
		if u.stop {
			stopped++
			continue
		}
		content++
		if first < 0 {
			first = i
		}
		last = i
	}
	if content == 0 || !(asked || len(out) >= 4 || len(out) >= 3 && stopped > 0) {
		return nil
	}
	q := &question{}
	for _, u := range out {
		if !u.stop {
			q.words = append(q.words, hanWords(u.text)...)
		}
	}
	// The range is of the text as typed; should folding have changed a
	// piece's length, there is no phrase.
	if start, end := out[first].start, out[last].end; last > first && start < end && end <= len(text) {
		q.phrase = strings.ToValidUTF8(text[start:end], "")
	}
	return q
}

// unitsOf returns the words of text as units, and the pieces of each plain
// word, nil for the others.
func unitsOf(text string) (us []unit, plain [][]folded) {
	at := 0
	for _, w := range words(text) {
		start := at + max(strings.Index(text[at:], w.text), 0)
		end := start + len(w.text)
		at = end
		// A word with symbols (c++, .net) is a word as written: its
		// letters alone may be a stop word (c, as in c'est).
		if w.quoted || w.prefix || propTerm.MatchString(w.text) || literalOf(w.text, w.prefix) != nil {
			t := w.text
			if w.quoted {
				t = `"` + t + `"`
				if w.prefix {
					t += "*"
				}
			}
			us = append(us, unit{text: t, start: start, end: end})
			plain = append(plain, nil)
			continue
		}
		ps := foldedPieces(w.text)
		for i := range ps {
			ps[i].start += start
			ps[i].end += start
		}
		plain = append(plain, ps)
		us = append(us, unit{text: w.text, start: start, end: end})
	}
	return us, plain
}

// splitAtStops splits the plain words us at their stop words, plain
// holding their pieces: a word stays whole unless some piece of it is one
// (l'index, what's, 会議のメモ).
func splitAtStops(us []unit, plain [][]folded) []unit {
	stops := stopWordsOf(plain)
	var out []unit
	for i, u := range us {
		ps := plain[i]
		if ps == nil {
			out = append(out, u)
			continue
		}
		var parts []unit
		dropped := false
		for _, p := range ps {
			for _, part := range splitUnspaced(p) {
				part.stop = part.stop || stops[part.text]
				dropped = dropped || part.stop
				parts = append(parts, part)
			}
		}
		if !dropped {
			out = append(out, u)
			continue
		}
		out = append(out, parts...)
	}
	return out
}

// questionExpr is a question as plan reads it.
type questionExpr struct {
	terms []term   // to mark in snippets
	props []string // the meta tokens of its key:value filters
	cover []string // the words to rank by, each an FTS5 expression
	// required are its quoted phrases when other words are there to rank
	// by: as in all mode, a note must hold them.
	required []string
	phrase   string // the expression of its phrase, "" without one
}

// expr reads the question's words as matchExpr reads a query's.
func (qn *question) expr(expand map[string][]string) questionExpr {
	var x questionExpr
	quoted := 0
	for _, w := range qn.words {
		if strings.HasPrefix(w, `"`) {
			quoted++
		}
	}
	for _, w := range qn.words {
		e, ts, ps := matchExpr(w, ModeAll, expand)
		x.terms, x.props = append(x.terms, ts...), append(x.props, ps...)
		switch {
		case e == "" || slices.Contains(x.cover, e) || slices.Contains(x.required, e):
		case strings.HasPrefix(w, `"`) && quoted < len(qn.words):
			x.required = append(x.required, e)
		default:
			x.cover = append(x.cover, e)
		}
	}
	if len(x.cover) == 0 { // the other words were filters
		x.cover, x.required = x.required, nil
	}
	if qn.phrase != "" {
		// Quoted, so its words (filters too) are one phrase.
		e, ts, _ := matchExpr(`"`+strings.ReplaceAll(qn.phrase, `"`, " ")+`"`, ModeAll, nil)
		x.phrase = e
		// The phrase ranks; it is never required, so a phrase with
		// symbols (in c++) is no literal every note must hold. Of its
		// terms only the phrase itself: its pieces are the words, marked
		// already, and its stop words, which a snippet does not mark ("a"
		// of "set up a new project").
		for _, t := range ts {
			if t.lit == nil && t.phrase {
				x.terms = append(x.terms, t)
			}
		}
	}
	return x
}

// hanWords is a word of a question as the words to rank by: a run of
// three or more Han characters is its overlapping pairs, since nothing
// shows where its words end (同步冲突 holds 同步 and 冲突, which a note
// may hold apart); any other word is itself.
func hanWords(w string) []string {
	rs := []rune(w)
	if len(rs) < 3 || !allHan(rs) {
		return []string{w}
	}
	var out []string
	for i := 0; i+1 < len(rs); i++ {
		out = append(out, string(rs[i:i+2]))
	}
	return out
}

func allHan(rs []rune) bool {
	for _, r := range rs {
		if !unicode.Is(unicode.Han, r) {
			return false
		}
	}
	return true
}

// splitUnspaced splits a piece at the particles of Japanese and Chinese
// and the endings of Korean, which stick to the words of a question
// ("会議のメモはどこ", "플러그인을 설치하나요"); a piece of a spaced script
// comes back whole.
func splitUnspaced(p folded) []unit {
	whole := []unit{{text: p.text, start: p.start, end: p.end}}
	if !p.unspaced {
		return whole
	}
	rs := []rune(p.text)
	if isHangul(rs[0]) {
		if stopWords()["ko"][p.text] {
			return []unit{{text: p.text, start: p.start, end: p.end, stop: true}}
		}
		// The longest ending that leaves a word of two syllables or more.
		for i := 2; i < len(rs); i++ {
			if koEndings[string(rs[i:])] {
				cut := p.start + len(string(rs[:i]))
				return []unit{{text: string(rs[:i]), start: p.start, end: cut}, {text: string(rs[i:]), start: cut, end: p.end, stop: true}}
			}
		}
		return whole
	}
	// Japanese and Chinese: the longest particle at each point, but a run
	// of kana that goes on past it is a word, not a particle.
	var out []unit
	word := 0 // start, in runes, of the word being read
	offset := func(i int) int { return p.start + len(string(rs[:i])) }
	for i := 0; i < len(rs); {
		n := cjkParticleAt(rs, i, i == word)
		if n == 0 {
			i++
			continue
		}
		if i > word {
			out = append(out, unit{text: string(rs[word:i]), start: offset(word), end: offset(i)})
		}
		out = append(out, unit{text: string(rs[i : i+n]), start: offset(i), end: offset(i + n), stop: true})
		i += n
		word = i
	}
	if len(out) == 0 {
		return whole
	}
	if word < len(rs) {
		out = append(out, unit{text: string(rs[word:]), start: offset(word), end: p.end})
	}
	return out
}

// cjkParticleAt returns the length in runes of the particle at rs[i:], 0
// when there is none; after says that rs[i] starts the run or follows a
// particle.
func cjkParticleAt(rs []rune, i int, after bool) int {
	for n := min(cjkLongest, len(rs)-i); n > 0; n-- {
		if !cjkParticles[string(rs[i:i+n])] {
			continue
		}
		// Hiragana after hiragana is part of a word (たべもの), unless
		// a particle precedes it (には, をください).
		if isHiragana(rs[i]) && !after && isHiragana(rs[i-1]) {
			continue
		}
		return n
	}
	return 0
}

func isHiragana(r rune) bool { return 0x3041 <= r && r <= 0x309F }
func isHangul(r rune) bool   { return 0xAC00 <= r && r <= 0xD7A3 }

// cjkParticles are the particles, question words and endings of Japanese
// and Chinese questions; cjkLongest is the longest, in runes.
var cjkParticles = setOf(
	// Japanese
	"の", "は", "が", "を", "に", "で", "と", "も", "へ", "や", "から", "まで", "より", "には", "では", "とは",
	"について", "ですか", "ますか", "でしょうか", "か", "どこ", "どう", "どうやって", "なに", "何", "いつ", "だれ", "どの",
	"どれ", "ありますか", "する", "します", "したい", "ください", "方法",
	// Chinese
	"的", "了", "吗", "呢", "吧", "是", "在", "和", "与", "我", "我的", "怎么", "怎样", "什么", "如何", "哪里", "哪些",
	"为什么", "有", "有没有", "可以", "能",
)

const cjkLongest = 5

// koEndings are the particles and question endings that stick to the end
// of a Korean word.
var koEndings = setOf("을", "를", "은", "는", "이", "가", "에", "에서", "의", "으로", "로", "와", "과", "도", "에게",
	"하나요", "하나", "인가요", "나요", "까요", "하는", "해요", "합니까", "하려면", "하는법")

func setOf(ws ...string) map[string]bool {
	m := make(map[string]bool, len(ws))
	for _, w := range ws {
		m[w] = true
	}
	return m
}

// stopWordsOf returns the stop words of the language whose list holds the
// most of the query's plain words (several languages' when they tie), so
// that "die" is dropped from a German question and kept in an English one.
func stopWordsOf(plain [][]folded) map[string]bool {
	lists := stopWords()
	best, count := []string(nil), 0
	for lang, list := range lists {
		n := 0
		for _, ps := range plain {
			for _, p := range ps {
				if list[p.text] {
					n++
				}
			}
		}
		switch {
		case n > count:
			best, count = []string{lang}, n
		case n == count && n > 0:
			best = append(best, lang)
		}
	}
	out := map[string]bool{}
	for _, lang := range best {
		for w := range lists[lang] {
			out[w] = true
		}
	}
	return out
}

// stopWords are the lists below, folded as the index folds words.
var stopWords = sync.OnceValue(func() map[string]map[string]bool {
	out := make(map[string]map[string]bool, len(stopLists))
	for lang, list := range stopLists {
		m := map[string]bool{}
		for _, w := range strings.Fields(list) {
			m[fold(w)] = true
		}
		out[lang] = m
	}
	return out
})

// stopLists are the words a question holds whatever it asks about:
// question words, articles, pronouns, prepositions, auxiliaries. Small on
// purpose: a word left out costs a little ranking, a word put in wrongly
// is never required.
var stopLists = map[string]string{
	"en": `a an the and or but if of to in on at by for with about from into over between as is are was were be been
		am do does did have has had i me my we our you your he she it its they them their this that these those
		what which who whom whose when where why how much many can could should would will shall may might must there
		here not no so than then too very just any some s t ll re ve d m don doesn isn aren didn`,
	"es": `el la los las lo un una unos unas y o de del al a en con por para sin sobre que qué cómo como cuál
		cuáles cuándo dónde quién es son está están ser estar fue hay mi mis tu tus su sus se me te le les nos
		yo tú él ella este esta estos estas ese esa eso muy más pero si no ya puedo puede hago hacer`,
	"de": `der die das den dem des ein eine einen einem einer und oder aber in im an am auf aus bei mit nach
		von vom zu zum zur für über ist sind war wird werden kann können wie was wo wann warum wer welche
		welcher welches ich mich mir du dich dir er ihn ihm sie es wir uns ihr euch ihnen mein meine meinen dein sein seine nicht kein keine auch noch nur so man
		sich wenn dass ob habe hat haben gibt`,
	"fr": `le la les l un une des du de d et ou mais à au aux en dans sur sous par pour avec sans que qu qui
		quoi quel quelle quels quelles comment où quand pourquoi est sont être ai as a avons ont je j tu il elle
		nous vous ils elles me m moi te t toi lui leur mon ma mes ton ta tes son sa ses ce cet cette ces c ne n pas plus se s y puis peut
		faire fait`,
	"pt": `o a os as um uma uns umas e ou de do da dos das em no na nos nas por para com sem sobre que como
		qual quais quando onde quem porque é são está estão ser foi há meu minha meus minhas seu sua eu você
		ele ela isso isto esse essa este esta não mais mas se me posso pode fazer faço`,
	"it": `il lo la i gli le l un uno una e o di del della dei delle da dal in nel nella nei su sul per con
		senza che chi come quale quali quando dove perché cosa è sono essere ho ha hanno mio mia miei tuo tua
		suo sua io tu lui lei noi voi loro non più ma si mi ti posso può fare questo questa quello quella`,
	"ru": `и в во на не что как где когда почему зачем кто какой какая какие каким это этот эта эти тот та с
		со к по из от до для о об у за при без же ли бы или а но да нет я ты он она мы вы они мой моя мои мне
		меня свой есть был была было быть можно нужно чтобы так также только уже ещё`,
	"ko": `어떻게 무엇 무엇을 뭐 어디 어디에 어디서 언제 왜 누가 어느 어떤 있나요 있어요 하나요 나는 내 제`,
}
