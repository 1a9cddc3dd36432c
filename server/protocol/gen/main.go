// Command gen writes margin's JSON-RPC types (package server/protocol) as
// one file of TypeScript interfaces, which both editor plugins import:
//
//	go run ./server/protocol/gen      # from the repository's root
//	go generate ./server/protocol     # the same
//
// It reflects over the types Methods and EditorCommands reach, as
// encoding/json would encode them: json tags name the fields, omitempty and
// omitzero make a field optional, a pointer, slice or map without them may
// be null, and an embedded struct's fields are the outer one's. A type
// keeps its Go name: server/protocol declares every type on the wire, and
// gen refuses an alias or an import of margin's own packages there. A test
// fails when the files are not what gen would write.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

// outputs are the generated files, relative to the repository's root: one
// per plugin, as each compiles only its own folder.
var outputs = []string{
	"editors/vscode/src/protocol.gen.ts",
	"editors/obsidian/src/protocol.gen.ts",
}

func main() {
	root := flag.String("root", ".", "the repository's root")
	flag.Parse()
	src, err := typeScript(filepath.Join(*root, "server", "protocol"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	for _, out := range outputs {
		if err := os.WriteFile(filepath.Join(*root, out), []byte(src), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "gen:", err)
			os.Exit(1)
		}
	}
}
