package evolution

import (
	"context"
	"strings"
	"testing"

	"github.com/margin-md/margin/agents/templates"
	"github.com/margin-md/margin/vault/vaulttest"
)

// withTemplateKeys adds frontmatter lines to a template's active file by
// hand, as a person would; the next Active picks them up as a new version.
func withTemplateKeys(t *testing.T, l *templates.Templates, dir, name, lines string) {
	t.Helper()
	if _, err := l.Active(context.Background(), name); err != nil { // seeds a built-in
		t.Fatal(err)
	}
	p := "Margin/Templates/" + name + ".md"
	src := vaulttest.Read(t, dir, p)
	edited := strings.Replace(src, "\nmargin: template\n", "\nmargin: template\n"+lines, 1)
	if edited == src {
		t.Fatalf("%s has no margin: template line:\n%s", p, src)
	}
	vaulttest.Write(t, dir, p, edited)
}
