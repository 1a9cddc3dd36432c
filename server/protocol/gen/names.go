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

// module is margin's import path, which protocol must not import from.
var module = strings.TrimSuffix(reflect.TypeFor[protocol.Method]().PkgPath(), "/server/protocol")

// declared reads the Go files of package protocol in dir: the names each
// method's result must reach (every exported type outside unlisted
// files). It refuses an import of margin's own packages and an alias:
// protocol declares each wire type itself, so that a change to an agent
// or the vault cannot change the wire unseen (server/wire converts).
func declared(dir string) (wire []string, err error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == module || strings.HasPrefix(p, module+"/") {
				return nil, fmt.Errorf("%s: protocol imports %s: it holds the wire types alone; convert to them in server/wire", fset.Position(imp.Pos()), p)
			}
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
				if spec.Assign.IsValid() {
					return nil, fmt.Errorf("%s: %s is an alias: declare the wire type itself, and convert to it in server/wire", fset.Position(spec.Pos()), spec.Name.Name)
				}
				if !unlisted[filepath.Base(path)] {
					wire = append(wire, spec.Name.Name)
				}
			}
		}
	}
	return wire, nil
}
