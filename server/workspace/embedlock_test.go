package workspace

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/margin-md/margin/vault/store"
)

// A status probe (store.Held) holds the embedding lock for an instant; a
// queue starting then takes it once the probe lets go, rather than
// waiting lockRetry as if another process embedded.
func TestEmbedLockWaitsOutAProbe(t *testing.T) {
	path := filepath.Join(t.TempDir(), embedLock)
	probe, err := store.TryLock(path)
	if err != nil {
		t.Fatal(err)
	}
	go probe.Unlock()
	l, err := takeEmbedLock(context.Background(), path)
	if err != nil {
		t.Fatalf("the lock a probe let go of: %v", err)
	}
	l.Unlock()
}

func TestEmbedLockHeldElsewhere(t *testing.T) {
	path := filepath.Join(t.TempDir(), embedLock)
	other, err := store.TryLock(path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Unlock()
	if _, err := takeEmbedLock(context.Background(), path); !errors.Is(err, store.ErrLocked) {
		t.Fatalf("a lock held throughout: got %v, want store.ErrLocked", err)
	}
}
