package vault

import (
	"bytes"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
)

// oldIgnoreBlock is what margin once appended to the vault's .gitignore;
// the state dir now holds a .gitignore of its own (see store.OpenDir).
func oldIgnoreBlock(stateDir string) []byte {
	return []byte("# margin's state (index, agents, ledger)\n/" + strings.Trim(filepath.ToSlash(stateDir), "/") + "/\n")
}

// RemoveOldIgnoreLine takes margin's old line out of the vault's .gitignore,
// where it is exactly as margin wrote it, and reports whether it did. Lines
// a person wrote or changed stay. It writes into the vault, so only a command
// that may (the server) calls it; reading commands leave .gitignore alone.
func (v *Vault) RemoveOldIgnoreLine() (bool, error) {
	snap, err := v.root.Read(".gitignore")
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	// A newline before the file and the block matches whole lines only.
	block := append([]byte{'\n'}, oldIgnoreBlock(v.opts.StateDir)...)
	content := append([]byte{'\n'}, snap.Content...)
	if !bytes.Contains(content, block) {
		return false, nil
	}
	kept := bytes.ReplaceAll(content, block, []byte{'\n'})[1:]
	if _, err := v.root.Write(".gitignore", snap.Fingerprint, kept); err != nil {
		return false, err
	}
	return true, nil
}
