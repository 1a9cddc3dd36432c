package note

import (
	"strings"
	"testing"
)

func TestTemplatePlaceholdersAreText(t *testing.T) {
	opts := Options{TemplateFolders: []string{"Templates"}}
	src := "---\ncreated: {{date}}\ntitle: Meeting {{date:YYYY-MM-DD}}\ntags: [meeting]\ncategories:\n  - \"[[Meetings]]\"\n  - {{title}}\nnext: <% tp.date.now(\"YYYY-MM-DD\", 7) %>\nnote: it's {{time}}\n---\n# {{title}}\n"
	n := Parse("Templates/Meeting.md", []byte(src), opts)
	if n.FrontmatterError != "" || n.Kind != KindTemplate {
		t.Fatalf("kind %s, error %q", n.Kind, n.FrontmatterError)
	}
	for key, want := range map[string]string{"created": "{{date}}", "title": "Meeting {{date:YYYY-MM-DD}}", "next": `<% tp.date.now("YYYY-MM-DD", 7) %>`, "note": "it's {{time}}"} {
		if got := n.Frontmatter.String(key); got != want {
			t.Errorf("%s = %q, want %q", key, got, want)
		}
	}
	if got := strings.Join(n.Frontmatter.Strings("categories"), "|"); got != "[[Meetings]]|{{title}}" {
		t.Errorf("categories = %q", got)
	}
	if got := strings.Join(n.Tags, ","); got != "meeting" {
		t.Errorf("tags = %q", got)
	}

	// Outside the templates folder the same header is an error that names
	// the key, in words.
	n = Parse("Notes/Meeting.md", []byte(src), opts)
	if !strings.Contains(n.FrontmatterError, `"created"`) || !strings.Contains(n.FrontmatterError, "placeholder") || strings.Contains(n.FrontmatterError, "map[") {
		t.Errorf("error %q", n.FrontmatterError)
	}
}
