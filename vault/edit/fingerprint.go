package edit

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"time"
)

// Fingerprint identifies a file's content: the hex SHA-256 of its bytes, so
// it can be stored and compared as text. The zero Fingerprint, "", stands for
// "no file", which no content hashes to.
type Fingerprint string

// FingerprintOf returns the fingerprint of content.
func FingerprintOf(content []byte) Fingerprint {
	sum := sha256.Sum256(content)
	return Fingerprint(hex.EncodeToString(sum[:]))
}

// IsZero reports whether f is the "no file" fingerprint.
func (f Fingerprint) IsZero() bool { return f == "" }

// IsOwnWrite reports whether content with fingerprint fp at path is something
// this Root wrote recently, so the watcher's consumer does not treat margin's
// own writes as user edits (and wake the agent that wrote them).
func (r *Root) IsOwnWrite(path string, fp Fingerprint) bool {
	p, err := Clean(path)
	if err != nil {
		return false
	}
	return r.own.has(p, fp)
}

// Why these defaults: a watcher event arrives after a 150 ms debounce, but a
// rescan after an overflow or a long queue can look at the file minutes later;
// by then the file holds one of the last few writes. Ten minutes and eight
// writes cover that while keeping the memory per path small.
const (
	defaultOwnPerPath = 8
	defaultOwnTTL     = 10 * time.Minute
)

type ownWrite struct {
	fp Fingerprint
	at time.Time
}

// ownWrites remembers the fingerprints of recent writes, per path.
type ownWrites struct {
	perPath int
	ttl     time.Duration
	now     func() time.Time // time.Now, replaced by tests

	mu     sync.Mutex // guards byPath
	byPath map[string][]ownWrite
}

func newOwnWrites() *ownWrites {
	return &ownWrites{
		perPath: defaultOwnPerPath,
		ttl:     defaultOwnTTL,
		now:     time.Now,
		byPath:  make(map[string][]ownWrite),
	}
}

func (o *ownWrites) remember(p string, fp Fingerprint) {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := o.now()
	o.expire(now)
	ws := append(o.byPath[p], ownWrite{fp: fp, at: now})
	if len(ws) > o.perPath {
		ws = ws[len(ws)-o.perPath:]
	}
	o.byPath[p] = ws
}

func (o *ownWrites) forget(p string, fp Fingerprint) {
	o.mu.Lock()
	defer o.mu.Unlock()
	ws := o.byPath[p]
	for i := len(ws) - 1; i >= 0; i-- {
		if ws[i].fp == fp {
			o.byPath[p] = append(ws[:i:i], ws[i+1:]...)
			break
		}
	}
	if len(o.byPath[p]) == 0 {
		delete(o.byPath, p)
	}
}

func (o *ownWrites) has(p string, fp Fingerprint) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := o.now()
	for _, w := range o.byPath[p] {
		if w.fp == fp && now.Sub(w.at) <= o.ttl {
			return true
		}
	}
	return false
}

// expire drops writes older than the TTL. It walks every path, which is cheap
// next to a file write and keeps the map from growing with the vault.
func (o *ownWrites) expire(now time.Time) {
	for p, ws := range o.byPath {
		i := 0
		for i < len(ws) && now.Sub(ws[i].at) > o.ttl {
			i++
		}
		switch {
		case i == len(ws):
			delete(o.byPath, p)
		case i > 0:
			o.byPath[p] = ws[i:]
		}
	}
}
