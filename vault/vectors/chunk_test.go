package vectors

import (
	"strings"
	"testing"
)

func TestEstimateTokens(t *testing.T) {
	for _, tc := range []struct {
		name string
		text string
		want int
	}{
		{"latin letters, three a token", "abcdef ghi", 3},
		{"cjk, one a character", "日本語のノート", 7},
		{"hangul", "한국어", 3},
		{"cyrillic, two thirds a character", "привет", 4},
		{"punctuation, one each", "a, b.", 3},
		{"spaces cost nothing", "   \n\t", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := estimateTokens(tc.text); got != tc.want {
				t.Errorf("estimateTokens(%q) = %d, want %d", tc.text, got, tc.want)
			}
		})
	}
}

func TestChunksOf(t *testing.T) {
	para := strings.Repeat("word ", 60) // 60 words of 4 letters: 80 tokens
	n := Note{Title: "Garden", Sections: []Section{
		sec(1, "Notes on the garden."),
		sec(3, "", "Plants"), // a heading with no body of its own
		sec(4, "Tomatoes need sun.", "Plants", "Tomatoes"),
		sec(8, para+"\n\n"+para+"\n\n"+para, "Plants", "Long"),
		sec(20, strings.Repeat("漢", 500), "Plants", "漢字"),
	}}
	const limit = 100
	cs := chunksOf(n, limit)

	t.Run("prefix is title and heading path", func(t *testing.T) {
		if cs[0].text != "Garden\n\nNotes on the garden." || cs[0].heading != "" || cs[0].line != 1 {
			t.Errorf("preamble chunk = %+v", cs[0])
		}
		if cs[1].text != "Garden > Plants > Tomatoes\n\nTomatoes need sun." || cs[1].heading != "Plants > Tomatoes" || cs[1].line != 4 {
			t.Errorf("subsection chunk = %+v", cs[1])
		}
	})
	t.Run("split to fit, every part prefixed", func(t *testing.T) {
		var long, cjk int
		for i, c := range cs {
			if c.ord != i {
				t.Errorf("chunk %d has ord %d", i, c.ord)
			}
			if c.tokens > limit || estimateTokens(c.text) != c.tokens {
				t.Errorf("chunk %d: %d tokens (estimate %d), limit %d", i, c.tokens, estimateTokens(c.text), limit)
			}
			switch c.heading {
			case "Plants > Long":
				long++
				if !strings.HasPrefix(c.text, "Garden > Plants > Long\n\nword") {
					t.Errorf("long chunk %d starts %q", i, c.text[:30])
				}
			case "Plants > 漢字":
				cjk++
			}
		}
		if long != 3 { // one paragraph each: two do not fit together
			t.Errorf("long section in %d chunks, want 3", long)
		}
		if cjk < 5 { // 500 characters, some 90 a chunk
			t.Errorf("CJK section in %d chunks, want at least 5", cjk)
		}
		var body strings.Builder
		for _, c := range cs {
			if c.heading == "Plants > 漢字" {
				body.WriteString(strings.TrimPrefix(c.text, "Garden > Plants > 漢字\n\n"))
			}
		}
		if body.String() != strings.Repeat("漢", 500) {
			t.Errorf("CJK section's chunks do not add up to it: %d bytes", body.Len())
		}
	})
	t.Run("hashes stable, only the changed section's change", func(t *testing.T) {
		again := chunksOf(n, limit)
		for i := range cs {
			if again[i].hash != cs[i].hash {
				t.Errorf("chunk %d hash changed between two runs", i)
			}
		}
		edited := n
		edited.Sections = append([]Section(nil), n.Sections...)
		edited.Sections[2].Text = "Tomatoes need sun and water."
		changed := 0
		for i, c := range chunksOf(edited, limit) {
			if c.hash != cs[i].hash {
				changed++
			}
		}
		if changed != 1 {
			t.Errorf("%d chunks changed, want 1", changed)
		}
	})
	t.Run("note with a title only", func(t *testing.T) {
		cs := chunksOf(Note{Title: "Empty", Sections: []Section{sec(1, "  ")}}, limit)
		if len(cs) != 1 || cs[0].text != "Empty" {
			t.Errorf("got %+v", cs)
		}
	})
	t.Run("runaway heading leaves room for the body", func(t *testing.T) {
		cs := chunksOf(Note{Title: strings.Repeat("long title ", 100), Sections: []Section{sec(1, "body")}}, limit)
		if len(cs) != 1 || cs[0].tokens > limit || !strings.HasSuffix(cs[0].text, "\n\nbody") {
			t.Errorf("got %+v", cs)
		}
	})
}
