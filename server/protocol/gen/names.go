package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"

	"github.com/margin-md/margin/server/protocol"
)

// unlisted are protocol's files whose types are not on the wire of
// margin's own methods: the tables' types, and the LSP shapes editors have
// from their LSP libraries.
var unlisted = map[string]bool{"protocol.go": true, "lsp.go": true}

// declared reads the Go files of package protocol in dir: the TypeScript
// name of each type it declares or renames, by the type's package path and
// Go name ("github.com/margin-md/margin/agents.Turn" → "EvolutionTurn"),
// and the names each method's result must reach (every exported type
// outside unlisted files).
func declared(dir string) (names map[string]string, wire []string, err error) {
	self := reflect.TypeFor[protocol.Method]().PkgPath()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, nil, err
	}
	names = map[string]string{}
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, nil, err
		}
		imports := map[string]string{} // by the name the file uses
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			name := p[strings.LastIndex(p, "/")+1:]
			if imp.Name != nil {
				name = imp.Name.Name
			}
			imports[name] = p
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, s := range g.Specs {
				spec := s.(*ast.TypeSpec)
				if !spec.Name.IsExported() {
					continue
				}
				key := self + "." + spec.Name.Name
				if spec.Assign.IsValid() {
					path, name := aliased(spec.Type, imports)
					if path == "" {
						return nil, nil, fmt.Errorf("%s: alias %s must name another package's type", fset.Position(spec.Pos()), spec.Name.Name)
					}
					key = path + "." + name
				}
				if prev, ok := names[key]; ok {
					return nil, nil, fmt.Errorf("%s: %s names the type %s names already", fset.Position(spec.Pos()), spec.Name.Name, prev)
				}
				names[key] = spec.Name.Name
				if !unlisted[filepath.Base(path)] {
					wire = append(wire, spec.Name.Name)
				}
			}
		}
	}
	return names, wire, nil
}

// aliased is the package path and name of the type an alias names, as
// pkg.Name; "" for anything else.
func aliased(t ast.Expr, imports map[string]string) (path, name string) {
	sel, ok := t.(*ast.SelectorExpr)
	if !ok {
		return "", ""
	}
	pkg, ok := sel.X.(*ast.Ident)
	if !ok {
		return "", ""
	}
	return imports[pkg.Name], sel.Sel.Name
}
