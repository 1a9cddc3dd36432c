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
func lockFile(f *os.File) error { return flock(f, syscall.LOCK_EX|syscall.LOCK_NB) }

// shareFile takes a shared flock on f, waiting for an exclusive one.
func shareFile(f *os.File) error { return flock(f, syscall.LOCK_SH) }

func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
