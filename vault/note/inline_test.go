package note

import (
	"reflect"
	"testing"
)

func TestLinks(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []Link
	}{
		{
			name: "wikilink forms",
			src:  "[[a]] [[b|Bee]] [[c#Head]] [[d#^blk]] [[e#H1#H2]] ![[f.png]] [[ g ]]",
			want: []Link{
				{Target: "a", Offset: 0, End: 5, Line: 1},
				{Target: "b", Alias: "Bee", Offset: 6, End: 15, Line: 1},
				{Target: "c", Heading: "Head", Offset: 16, End: 26, Line: 1},
				{Target: "d", Block: "blk", Offset: 27, End: 37, Line: 1},
				{Target: "e", Heading: "H1#H2", Offset: 38, End: 49, Line: 1},
				{Target: "f.png", Embed: true, Offset: 50, End: 60, Line: 1},
				{Target: "g", Offset: 61, End: 68, Line: 1},
			},
		},
		{
			name: "link to own heading and escaped pipe in a table",
			src:  "| a |\n|---|\n| [[#Top]] [[x\\|y]] |\n",
			want: []Link{
				{Heading: "Top", Offset: 14, End: 22, Line: 3},
				{Target: "x", Alias: "y", Offset: 23, End: 31, Line: 3},
			},
		},
		{
			name: "not wikilinks",
			src:  "[[]] [[ ]] [[open\nclose]] [[a]b]\n",
		},
		{
			name: "inner opening starts over",
			src:  "[[a [[b]]",
			want: []Link{{Target: "b", Offset: 4, End: 9, Line: 1}},
		},
		{
			name: "markdown links",
			src:  "[One](one.md) [Two](<dir/two words.md#Sec>) [Three](three%20x.md \"t\") ![Img](i.png)\n[Self](#Local%20Head) [Esc](a\\_b.md) [Blk](n.md#^id)",
			want: []Link{
				{Target: "one.md", Alias: "One", Markdown: true, Offset: 0, End: 13, Line: 1},
				{Target: "dir/two words.md", Heading: "Sec", Alias: "Two", Markdown: true, Offset: 14, End: 43, Line: 1},
				{Target: "three x.md", Alias: "Three", Markdown: true, Offset: 44, End: 69, Line: 1},
				{Target: "i.png", Alias: "Img", Markdown: true, Embed: true, Offset: 70, End: 83, Line: 1},
				{Heading: "Local Head", Alias: "Self", Markdown: true, Offset: 84, End: 105, Line: 2},
				{Target: "a_b.md", Alias: "Esc", Markdown: true, Offset: 106, End: 120, Line: 2},
				{Target: "n.md", Block: "id", Alias: "Blk", Markdown: true, Offset: 121, End: 136, Line: 2},
			},
		},
		{
			name: "nested brackets and code in the label",
			src:  "[a [b] `]` c](x.md)",
			want: []Link{{Target: "x.md", Alias: "a [b] `]` c", Markdown: true, Offset: 0, End: 19, Line: 1}},
		},
		{
			name: "reference links",
			src:  "[full][r] [r] [collapsed][]\n\n[r]: ref.md\n",
			want: []Link{
				{Target: "ref.md", Alias: "full", Markdown: true, Offset: 0, End: 9, Line: 1},
				{Target: "ref.md", Alias: "r", Markdown: true, Offset: 10, End: 13, Line: 1},
			},
		},
		{
			name: "external links are not links",
			src:  "[w](https://x.y/a.md) [m](mailto:a@b.c) [o](obsidian://open?x) [p](//cdn/x.md) <https://x.y/[[a]]> [e]()",
		},
		{
			name: "links in code are not links",
			src:  "`[[a]]` and ``[b](b.md)``\n\n```\n[[c]]\n```\n\n    [[d]]\n\n<div>\n[[e]]\n</div>\n",
		},
		{
			name: "wikilink inside a markdown label is Obsidian's wikilink",
			src:  "[[w]](x.md)",
			want: []Link{{Target: "w", Offset: 0, End: 5, Line: 1}},
		},
		{
			name: "links in headings, lists, quotes, after frontmatter, crlf",
			src:  "---\na: 1\n---\r\n# [[H]]\r\n- [ ] [[L]]\r\n> [q](q.md)\r\n",
			want: []Link{
				{Target: "H", Offset: 16, End: 21, Line: 4},
				{Target: "L", Offset: 29, End: 34, Line: 5},
				{Target: "q.md", Alias: "q", Markdown: true, Offset: 38, End: 47, Line: 6},
			},
		},
		{
			name: "a lone carriage return ends a line, as in LSP",
			src:  "[[a]]\r[[b]]\r\n[[c]]\n[[d]]",
			want: []Link{
				{Target: "a", Offset: 0, End: 5, Line: 1},
				{Target: "b", Offset: 6, End: 11, Line: 2},
				{Target: "c", Offset: 13, End: 18, Line: 3},
				{Target: "d", Offset: 19, End: 24, Line: 4},
			},
		},
		{
			name: "multi-line paragraph keeps order",
			src:  "[m](m.md) then [[w]]\nand [[x]] [n](n.md)\n",
			want: []Link{
				{Target: "m.md", Alias: "m", Markdown: true, Offset: 0, End: 9, Line: 1},
				{Target: "w", Offset: 15, End: 20, Line: 1},
				{Target: "x", Offset: 25, End: 30, Line: 2},
				{Target: "n.md", Alias: "n", Markdown: true, Offset: 31, End: 40, Line: 2},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := Parse("a.md", []byte(tt.src), Options{})
			if !reflect.DeepEqual(n.Links, tt.want) {
				t.Errorf("Links\n got %+v\nwant %+v", n.Links, tt.want)
			}
			checkOffsets(t, []byte(tt.src), n)
		})
	}
}

func TestTags(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{name: "inline and nested", src: "Some #work and #project/alpha-2 text.", want: []string{"work", "project/alpha-2"}},
		{name: "start of line, list and heading", src: "#one\n- #two\n## Head #three\n", want: []string{"one", "two", "three"}},
		{name: "unicode", src: "#café #日本語 #naïve_x", want: []string{"café", "日本語", "naïve_x"}},
		{name: "first spelling kept", src: "---\ntags: [Work]\n---\n#work #WORK #other", want: []string{"Work", "other"}},
		{name: "frontmatter forms", src: "---\ntags: \"#a, b c\"\ntag: d\n---\n", want: []string{"a", "b", "c", "d"}},
		{name: "trailing slash dropped", src: "#a/b/ end", want: []string{"a/b"}},
		{name: "pure numbers are not tags", src: "PR #123 and #2026-11 but #1a", want: []string{"1a"}},
		{name: "url fragments and headings are not tags", src: "# Heading\nhttps://x.y/p#frag [[n#h]] a#b &#35; \\#esc", want: nil},
		{name: "code is not tagged", src: "`#code`\n\n```\n#fenced\n```\n\n    #indented\n", want: nil},
		{name: "link destinations are not tagged", src: "[x]( #notag.md) <span title=\"a #b\">t</span>", want: nil},
		{name: "tag ends at punctuation", src: "(#paren) #end. #comma, #q?", want: []string{"end", "comma", "q"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := Parse("a.md", []byte(tt.src), Options{})
			if !reflect.DeepEqual(n.Tags, tt.want) {
				t.Errorf("Tags = %q, want %q", n.Tags, tt.want)
			}
		})
	}
}
