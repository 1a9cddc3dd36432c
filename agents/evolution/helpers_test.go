package evolution

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/margin-md/margin/agents/templates"
)

// withTemplateKeys adds frontmatter lines to a template's active file by
// hand, as a person would; the next Active picks them up as a new version.
func withTemplateKeys(t *testing.T, l *templates.Templates, dir, name, lines string) {
	t.Helper()
	if _, err := l.Active(context.Background(), name); err != nil { // seeds a built-in
		t.Fatal(err)
	}
	p := "Margin/Templates/" + name + ".md"
	src := read(t, dir, p)
	edited := strings.Replace(src, "\nmargin: template\n", "\nmargin: template\n"+lines, 1)
	if edited == src {
		t.Fatalf("%s has no margin: template line:\n%s", p, src)
	}
	write(t, dir, p, edited)
}

func read(t *testing.T, dir, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func write(t *testing.T, dir, rel, content string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755)
	if err := os.WriteFile(filepath.Join(dir, rel), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
