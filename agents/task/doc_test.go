package task

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// A doc comment that names its function spells the name as the code
// does: "Kick asks…" over an unexported kick sends a reader looking for
// an exported Kick that does not exist. Every package under agents/ is
// checked.
func TestDocCommentsSpellTheirFunction(t *testing.T) {
	files, err := filepath.Glob("../*/*.go")
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob("../*/*/*.go")
	fset := token.NewFileSet()
	for _, p := range append(files, more...) {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Doc == nil {
				continue
			}
			first, _, _ := strings.Cut(fn.Doc.Text(), " ")
			if name := fn.Name.Name; first != name && strings.EqualFold(first, name) {
				t.Errorf("%s: the comment on %s calls it %s", fset.Position(fn.Pos()), name, first)
			}
		}
	}
}
