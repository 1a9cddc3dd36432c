//go:build unix

package store

import (
	"errors"
	"os"
	"syscall"
)

const oNoFollow = syscall.O_NOFOLLOW

var errWouldBlock = syscall.EWOULDBLOCK

// lockFile takes an exclusive flock on f without waiting.
func lockFile(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
