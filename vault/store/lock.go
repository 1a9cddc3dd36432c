package store

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// ErrLocked says another process holds the lock.
var ErrLocked = errors.New("held by another margin process")

// A Lock is an exclusive lock on a file of the state dir, across the
// processes of one machine. The kernel releases it when the process ends,
// however it ends (kill -9 too), so a lock is never left stale.
type Lock struct{ f *os.File }

// TryLock takes the lock on the file at path, creating it, without
// waiting for a holder: ErrLocked when another process holds it. A Held
// looking at the file takes the lock itself for an instant, so a lock
// found taken is tried again for a moment before it counts as held: a
// process starting its work while a margin status looks must not take
// the look for another process at work. path must be in the state dir,
// which OpenDir checked for symbolic links; the file itself is opened
// without following one.
func TryLock(path string) (*Lock, error) {
	l, err := tryLock(path)
	for try := 0; errors.Is(err, ErrLocked) && try < probeTries; try++ {
		time.Sleep(probeWait)
		l, err = tryLock(path)
	}
	return l, err
}

// A Held holds the file for microseconds; these outlast many of them.
const (
	probeTries = 20
	probeWait  = 10 * time.Millisecond
)

// tryLock is one attempt at the lock.
func tryLock(path string) (*Lock, error) {
	l, err := take(path, lockFile)
	if errors.Is(err, errWouldBlock) {
		return nil, ErrLocked
	}
	return l, err
}

// Unlock releases the lock.
func (l *Lock) Unlock() error { return l.f.Close() }

// Share takes a shared lock on the file at path, creating it: any number
// of processes hold it at once, and Held reports whether one does. It
// waits only while a Held looks, which holds the file for microseconds.
func Share(path string) (*Lock, error) { return take(path, shareFile) }

// take opens the file at path, creating it, and locks it with lock.
func take(path string, lock func(*os.File) error) (*Lock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|oNoFollow, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := lock(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return &Lock{f: f}, nil
}

// Held reports whether another process holds a lock (Share or TryLock)
// on the file at path; false when there is no such file.
func Held(path string) (bool, error) {
	l, err := tryLock(path)
	switch {
	case errors.Is(err, ErrLocked):
		return true, nil
	case err != nil:
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
		return false, err
	}
	return false, l.Unlock()
}
