package watch

// The directory tree the watcher keeps: which directories are watched,
// which files each holds, so a removed directory reports its files.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// know records that the file rel exists, so that its directory's removal
// reports it.
func (w *Watcher) know(rel string) {
	dir, name := splitRel(rel)
	if d := w.dirs[dir]; d != nil {
		d.files.add(name)
	}
}

// addDir watches the directory rel and everything under it that is not
// ignored, and learns the files there. With report set, files it did not know
// are marked changed: a directory that appears while margin runs (mkdir -p
// a/b/c, a directory moved in) may hold files created before its watch was
// added, and no event will ever name them. It returns the first error that
// left a directory unwatched that was not already so.
func (w *Watcher) addDir(rel string, now time.Time, report bool) error {
	abs := w.abs(rel)
	d := w.dirs[rel]
	if d == nil {
		d = &dirState{}
		w.dirs[rel] = d
	}
	var failure error
	// Adding is repeated even for a watched directory: it is idempotent and
	// cheap, and after an overflow it is what puts back a lost watch.
	if err := w.addWatch(abs); err != nil {
		if isGone(err) {
			// It went again before we got to it; its removal event is queued
			// behind the create that brought us here.
			w.forgetDir(rel)
			return nil
		}
		if !d.watched {
			if _, known := w.failed[rel]; !known {
				failure = fmt.Errorf("%s: %w", displayDir(rel), err)
			}
			w.failed[rel] = err
		}
	} else if !d.watched {
		d.watched = true
		w.watched++
		delete(w.failed, rel)
	}

	entries, err := os.ReadDir(abs)
	if err != nil {
		if !isGone(err) {
			w.log.Warn("scanning directory", "dir", displayDir(rel), "err", err)
		}
		return failure
	}
	for _, e := range entries {
		child := joinRel(rel, e.Name())
		if e.IsDir() {
			if w.ignore(child, true) {
				continue
			}
			if err := w.addDir(child, now, report); failure == nil {
				failure = err
			}
			continue
		}
		if w.ignore(child, false) {
			continue
		}
		if d.files.add(e.Name()) && report {
			w.touch(child, now)
		}
	}
	return failure
}

// dirGone handles the removal or renaming away of the directory rel: every
// file known under it is reported, and its watches and those of its
// subdirectories are dropped. Dropping them matters for a rename: inotify
// keeps watching the moved directory under its old name, and would otherwise
// report the files of its new place under the old path.
func (w *Watcher) dirGone(rel string, now time.Time) {
	for r, d := range w.dirs {
		if !isUnder(r, rel) {
			continue
		}
		for _, name := range d.files {
			w.touch(joinRel(r, name), now)
		}
		w.forgetDir(r)
	}
	if rel == "" {
		w.rootGone = true
		w.log.Warn("the vault directory was removed or renamed", "dir", w.root)
	}
	w.publish()
}

// forgetDir drops what is known about the single directory rel.
func (w *Watcher) forgetDir(rel string) {
	d := w.dirs[rel]
	if d == nil {
		return
	}
	if d.watched {
		w.watched--
		// The kernel has already dropped the watch of a deleted directory, so
		// an error here only says there was nothing left to remove.
		_ = w.fsw.Remove(w.abs(rel))
	}
	delete(w.dirs, rel)
	delete(w.failed, rel)
}

// rel turns an absolute event path into a vault-relative one.
func (w *Watcher) rel(name string) (string, bool) {
	r, err := filepath.Rel(w.root, name)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", false
	}
	if r == "." {
		return "", true
	}
	return filepath.ToSlash(r), true
}

func (w *Watcher) abs(rel string) string {
	return filepath.Join(w.root, filepath.FromSlash(rel))
}

func joinRel(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

func splitRel(rel string) (dir, name string) {
	i := strings.LastIndexByte(rel, '/')
	if i < 0 {
		return "", rel
	}
	return rel[:i], rel[i+1:]
}

// isUnder reports whether rel is dir or inside it.
func isUnder(rel, dir string) bool {
	return dir == "" || rel == dir || strings.HasPrefix(rel, dir+"/")
}

func displayDir(rel string) string {
	if rel == "" {
		return "."
	}
	return rel
}

// isGone reports whether err says a path does not exist, including when a
// directory on the way to it was replaced by a file.
func isGone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}
