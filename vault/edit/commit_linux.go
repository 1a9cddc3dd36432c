package edit

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// replace puts the temp file in the place of an existing target without the
// window a rename leaves: a rename drops whatever a user saved between the
// final re-check and the rename, and no system call renames only if the
// target is still the file that was checked. An exchange (renameat2
// RENAME_EXCHANGE) swaps the two names atomically and keeps the file it
// takes out under the temp name, so what was replaced is checked after
// the fact: the base, with no program writing it, is dropped; anything
// else is a save that landed in the window and is put back (putBack).
// Filesystems without the exchange (FAT, NFS, some FUSE) fall back to a
// rename and keep its window.
func (r *Root) replace(p, target, tmp string, base, fp Fingerprint) error {
	ours, err := r.fileID(tmp)
	if err != nil {
		return err
	}
	dir, err := r.root.Open(path.Dir(target))
	if err != nil {
		return r.classify(err)
	}
	defer dir.Close()
	a, b := path.Base(tmp), path.Base(target)
	switch err := exchange(dir, a, b); {
	case errors.Is(err, errors.ErrUnsupported):
		return r.classify(r.root.Rename(tmp, target))
	case errors.Is(err, syscall.ENOENT):
		// The note was removed since the re-check: do not bring it back.
		return &ConflictError{Path: p, Base: base}
	case err != nil:
		return fmt.Errorf("swapping in the new content: %w", err)
	}
	if testHookAfterSwap != nil {
		testHookAfterSwap()
	}
	out := r.inspect(tmp)
	if out.settled && out.fp == base {
		r.root.Remove(tmp) // the base, as checked: the write is done
		return nil
	}
	return r.putBack(p, target, tmp, dir, base, taken{id: ours, fp: fp, settled: true}, out)
}

// putBack undoes a swap that took out a user's save (put), which the temp
// name now holds, while target holds placed. Another exchange puts the save
// back; what it takes out is placed, unchanged, unless the user saved yet
// again meanwhile: that newer save then goes back in turn, and the older
// one it superseded is dropped, as the user's own save dropped it.
func (r *Root) putBack(p, target, tmp string, dir *os.File, base Fingerprint, placed, put taken) error {
	for {
		if err := exchange(dir, path.Base(tmp), path.Base(target)); err != nil {
			return r.keep(p, target, tmp, err)
		}
		back := r.inspect(tmp)
		if back.settled && back.id == placed.id && back.fp == placed.fp {
			r.root.Remove(tmp)
			if !put.settled {
				return fmt.Errorf("%s: %w", p, ErrBusy)
			}
			return &ConflictError{Path: p, Base: base, Current: put.fp}
		}
		placed, put = put, back
	}
}

// keep saves a user's file that putBack could not swap back (the note was
// removed meanwhile) under a visible name beside the note, rather than let
// it go with the temp file.
func (r *Root) keep(p, target, held string, cause error) error {
	ext := path.Ext(target)
	stamp := time.Now().Format("20060102-150405.000")
	for _, kept := range []string{
		fmt.Sprintf("%s (kept by margin %s)%s", strings.TrimSuffix(target, ext), stamp, ext),
		path.Join(path.Dir(target), "kept by margin "+stamp+ext), // the note's name may be too long to extend
	} {
		if err := r.root.Rename(held, kept); err == nil {
			return fmt.Errorf("%w: a save that landed while margin wrote %s could not be put back (%v); it is kept as %s", ErrConflict, p, cause, kept)
		}
	}
	return fmt.Errorf("a save that landed while margin wrote %s could not be put back (%v); it is kept as %s: %w", p, cause, held, errHeldInTemp)
}

// errHeldInTemp: a user's save is held under the temp name, which must
// then not be removed.
var errHeldInTemp = errors.New("held in a temp file")

// taken is a file a swap took out of a note's place.
type taken struct {
	id fileID
	fp Fingerprint
	// settled: a regular file that no program had open for writing while
	// it was read, so fp is all of it. Anything else is a save in progress
	// or something the user put there, and goes back.
	settled bool
}

type fileID struct{ dev, ino uint64 }

func (r *Root) fileID(name string) (fileID, error) {
	info, err := r.root.Lstat(name)
	if err != nil {
		return fileID{}, r.classify(err)
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, fmt.Errorf("%s: no inode number", name)
	}
	return fileID{dev: uint64(st.Dev), ino: st.Ino}, nil
}

// inspect reads what a swap took out. Failing to read it counts as not
// settled, so it is put back rather than dropped.
func (r *Root) inspect(name string) taken {
	info, err := r.root.Lstat(name)
	if err != nil || !info.Mode().IsRegular() {
		return taken{}
	}
	id, err := r.fileID(name)
	if err != nil {
		return taken{}
	}
	cur, busy, err := r.readOnce(name)
	if err != nil || busy || !cur.exists {
		return taken{id: id}
	}
	return taken{id: id, fp: cur.fp, settled: true}
}

// exchange swaps two names in dir atomically; errors.ErrUnsupported where
// the filesystem cannot.
func exchange(dir *os.File, a, b string) error {
	sc, err := dir.SyscallConn()
	if err != nil {
		return err
	}
	var xerr error
	if err := sc.Control(func(fd uintptr) {
		for {
			xerr = unix.Renameat2(int(fd), a, int(fd), b, unix.RENAME_EXCHANGE)
			if xerr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	switch {
	case xerr == nil:
		return nil
	case errors.Is(xerr, syscall.EINVAL), errors.Is(xerr, syscall.ENOSYS), errors.Is(xerr, syscall.ENOTSUP):
		return fmt.Errorf("exchanging %s and %s: %w (%w)", a, b, errors.ErrUnsupported, xerr)
	}
	return &os.LinkError{Op: "renameat2", Old: a, New: b, Err: xerr}
}

// leaseRead takes a read lease on f (fcntl F_SETLEASE): the kernel grants
// it only when no file description has the file open for writing, and
// while it is held a program opening the file for writing or truncating it
// waits until it is released, which closing f does. So a read under the
// lease sees one whole version of the file. held is false where leases are
// not available (a file of another owner, a filesystem without them);
// errWriting says a writer has the file open now.
func leaseRead(f *os.File) (held bool, err error) {
	sc, err := f.SyscallConn()
	if err != nil {
		return false, nil
	}
	var lerr error
	if err := sc.Control(func(fd uintptr) {
		_, lerr = unix.FcntlInt(fd, unix.F_SETLEASE, unix.F_RDLCK)
	}); err != nil {
		return false, nil
	}
	switch {
	case lerr == nil:
		return true, nil
	case errors.Is(lerr, syscall.EAGAIN):
		return false, errWriting
	}
	return false, nil
}
