package store

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// One holder at a time: a second TryLock (as another process would, on a
// file of its own opening) is refused until the first unlocks; a symbolic
// link where the lock file goes is not followed.
func TestTryLock(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no lock across processes on this system")
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "agents.lock")
	l, err := TryLock(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := TryLock(p); !errors.Is(err, ErrLocked) {
		t.Fatalf("second TryLock: %v, want ErrLocked", err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	l2, err := TryLock(p)
	if err != nil {
		t.Fatalf("TryLock after Unlock: %v", err)
	}
	l2.Unlock()

	link := filepath.Join(dir, "link.lock")
	if err := os.Symlink(filepath.Join(t.TempDir(), "elsewhere"), link); err != nil {
		t.Fatal(err)
	}
	if l, err := TryLock(link); err == nil {
		l.Unlock()
		t.Error("TryLock followed a symbolic link")
	}
}

// A shared lock is held by any number of holders at once, and Held sees
// it until the last one lets go; Held takes nothing it keeps.
func TestShareAndHeld(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no lock across processes on this system")
	}
	p := filepath.Join(t.TempDir(), "watch.lock")
	if held, err := Held(p); err != nil || held {
		t.Fatalf("Held before any lock: %v, %v", held, err)
	}
	a, err := Share(p)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Share(p)
	if err != nil {
		t.Fatalf("second Share: %v", err)
	}
	for _, l := range []*Lock{a, b} {
		if held, err := Held(p); err != nil || !held {
			t.Fatalf("Held while shared: %v, %v", held, err)
		}
		l.Unlock()
	}
	if held, err := Held(p); err != nil || held {
		t.Fatalf("Held after both let go: %v, %v", held, err)
	}
	c, err := Share(p) // Held kept nothing
	if err != nil {
		t.Fatal(err)
	}
	c.Unlock()
}

// A Held's look holds the lock for an instant; a TryLock in that instant
// takes it once the look lets go, rather than report another holder.
func TestTryLockWaitsOutAProbe(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	probe, err := tryLock(path)
	if err != nil {
		t.Fatal(err)
	}
	go probe.Unlock()
	l, err := TryLock(path)
	if err != nil {
		t.Fatalf("the lock a probe let go of: %v", err)
	}
	l.Unlock()
}

func TestTryLockHeldThroughout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	other, err := TryLock(path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Unlock()
	if _, err := TryLock(path); !errors.Is(err, ErrLocked) {
		t.Fatalf("a lock held throughout: got %v, want ErrLocked", err)
	}
}
