package index

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines is the most lines a function of this package may run, from
// its func keyword to its closing brace: queryPlan.search grew to 299
// lines of filters, SQL, tiers, counting and best sections in one (#36),
// and a function past this has most often taken on a second concern.
const maxFuncLines = 80

// longFunc is a function declared over maxFuncLines lines.
type longFunc struct {
	at    token.Position
	name  string // Recv.Name for a method
	lines int
}

// longFuncs returns the functions of the Go source src, named file, that
// run over max lines.
func longFuncs(fset *token.FileSet, file string, src []byte, max int) ([]longFunc, error) {
	f, err := parser.ParseFile(fset, file, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var out []longFunc
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok {
			continue
		}
		start, end := fset.Position(fd.Pos()), fset.Position(fd.End())
		if n := end.Line - start.Line + 1; n > max {
			name := fd.Name.Name
			if fd.Recv != nil && len(fd.Recv.List) == 1 {
				name = recvName(fd.Recv.List[0].Type) + "." + name
			}
			out = append(out, longFunc{at: start, name: name, lines: n})
		}
	}
	return out, nil
}

// recvName is the type name of a receiver, without '*' or type
// parameters.
func recvName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return recvName(t.X)
	case *ast.IndexExpr:
		return recvName(t.X)
	case *ast.IndexListExpr:
		return recvName(t.X)
	case *ast.Ident:
		return t.Name
	}
	return "?"
}

func TestNoFunctionOver80Lines(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	read := 0
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		long, err := longFuncs(fset, file, src, maxFuncLines)
		if err != nil {
			t.Fatal(err)
		}
		read++
		for _, f := range long {
			t.Errorf("%s: %s runs %d lines, over %d: split it into functions of one concern each", f.at, f.name, f.lines, maxFuncLines)
		}
	}
	if read == 0 {
		t.Fatal("no source file read")
	}
}

// TestLongFuncs checks the check: a function one line over the bound is
// found, by its method name, and one at the bound is not.
func TestLongFuncs(t *testing.T) {
	body := func(name string, lines int) string {
		// func line, lines-2 statements, closing brace.
		return "func " + name + " {\n" + strings.Repeat("\t_ = 0\n", lines-2) + "}\n"
	}
	src := "package p\n\ntype plan struct{}\n\n" + body("atBound()", maxFuncLines) + body("(p *plan) overBound()", maxFuncLines+1)
	long, err := longFuncs(token.NewFileSet(), "p.go", []byte(src), maxFuncLines)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(long)
	if len(long) != 1 || long[0].name != "plan.overBound" || long[0].lines != maxFuncLines+1 {
		t.Errorf("long functions = %s, want only plan.overBound of %d lines", got, maxFuncLines+1)
	}
}
