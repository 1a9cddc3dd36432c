//go:build !unix

package index

import (
	"errors"
	"os"
)

// coldBuilds is false where margin does not lock a cold build's marker
// (see coldMarker): there every index is built the usual way, synced.
const coldBuilds = false

var errLocked = errors.New("locked by another process")

func lock(*os.File) error { return errors.ErrUnsupported }
