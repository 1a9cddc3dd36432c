package store

import (
	"errors"
	"fmt"
	"os"
)

// ErrLocked says another process holds the lock.
var ErrLocked = errors.New("held by another margin process")

// A Lock is an exclusive lock on a file of the state dir, across the
// processes of one machine. The kernel releases it when the process ends,
// however it ends (kill -9 too), so a lock is never left stale.
type Lock struct{ f *os.File }

// TryLock takes the lock on the file at path, creating it, without
// waiting: ErrLocked when another process holds it. path must be in the
// state dir, which OpenDir checked for symbolic links; the file itself is
// opened without following one.
func TryLock(path string) (*Lock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|oNoFollow, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		if errors.Is(err, errWouldBlock) {
			return nil, ErrLocked
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return &Lock{f: f}, nil
}

// Unlock releases the lock.
func (l *Lock) Unlock() error { return l.f.Close() }
