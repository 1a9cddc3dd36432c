package server_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/margin-md/margin/server/editortest"
	"github.com/margin-md/margin/vault/vaulttest"
)

// A cloned vault whose state dir and .gitignore lead out of it (issue 18.2):
// initialize is refused with a message naming the link, and no file outside
// the vault is created, changed or deleted, the damaged index there included.
func TestInitializeRefusesASymlinkedStateDir(t *testing.T) {
	dir, elsewhere := editortest.SampleVault(t), t.TempDir()
	os.Mkdir(filepath.Join(dir, ".git"), 0o755)
	outside := map[string]string{"gitignore": "*.log\n", "state/index.db": "damaged", "state/index.db-cold": ""}
	for name, content := range outside {
		os.MkdirAll(filepath.Join(elsewhere, filepath.Dir(name)), 0o755)
		os.WriteFile(filepath.Join(elsewhere, name), []byte(content), 0o644)
	}
	os.Symlink(filepath.Join(elsewhere, "gitignore"), filepath.Join(dir, ".gitignore"))
	os.Symlink(filepath.Join(elsewhere, "state"), filepath.Join(dir, ".margin"))

	e := editortest.Start(t, nil)
	err := e.Call("initialize", map[string]any{"rootUri": "file://" + dir, "capabilities": map[string]any{}}, nil)
	if want := filepath.Join(dir, ".margin") + " is a symbolic link to " + filepath.Join(elsewhere, "state"); err == nil || !strings.Contains(err.Message, want) {
		t.Errorf("initialize = %v, want an error saying %q", err, want)
	}
	if err == nil {
		e.MustCall("vault/search", map[string]any{"query": "bench"}, nil) // the first scan, which writes the index
	}
	vaulttest.Unchanged(t, elsewhere, outside)
}
