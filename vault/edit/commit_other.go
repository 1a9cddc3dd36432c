//go:build !linux

package edit

import (
	"errors"
	"os"
)

// replace puts the temp file in the place of an existing target. Without
// an atomic exchange (Linux only) it is a rename, which leaves a window:
// a save landing between the final re-check and the rename is replaced.
func (r *Root) replace(p, target, tmp string, base, fp Fingerprint) error {
	return r.classify(r.root.Rename(tmp, target))
}

// leaseRead is not available here: reads fall back to checking that the
// file's size and modification time did not change while it was read.
func leaseRead(f *os.File) (held bool, err error) { return false, nil }

// errHeldInTemp is never returned here: without an exchange no user's file
// is ever held under a temp name.
var errHeldInTemp = errors.New("held in a temp file")
