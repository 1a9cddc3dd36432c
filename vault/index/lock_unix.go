//go:build unix

package index

import (
	"errors"
	"os"
	"syscall"
)

// coldBuilds says whether cold builds can run here: their marker must be
// locked (see coldMarker).
const coldBuilds = true

// errLocked is what lock returns when another process holds the lock.
var errLocked = syscall.EWOULDBLOCK

// lock takes an exclusive flock on f without waiting.
func lock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
