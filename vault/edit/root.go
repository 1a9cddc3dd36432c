// Package edit owns every byte margin writes into a user's vault: it confines
// paths to the vault, writes files atomically with a compare-and-swap against
// what margin last read, remembers its own writes so the watcher's consumer can
// tell them from user edits, and splices notes (frontmatter keys, checklist
// boxes, lines, sections) so that a change touches only the bytes it means to.
//
// It must not decide what to write: it knows nothing of tasks, agents, change
// sets or the index, and it never re-renders a whole note. The splicing
// functions are pure (no I/O) so they apply as well to the buffer of a note
// open in the editor, whose edits go through workspace/applyEdit (Editor).
// Root.Change is the one way to change a note, open or not (change.go).
// Only Root touches the disk, and only inside the vault.
package edit

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrConflict is matched (errors.Is) by every *ConflictError.
var ErrConflict = errors.New("file changed on disk")

// ConflictError refuses a write because the file on disk is not the one the
// writer read: someone (usually the user) changed, created or removed it since.
type ConflictError struct {
	Path    string      // vault-relative
	Base    Fingerprint // what the writer expected; zero means "must not exist"
	Current Fingerprint // what is on disk now; zero means it does not exist
}

func (e *ConflictError) Error() string {
	switch {
	case e.Base.IsZero():
		return fmt.Sprintf("%s already exists", e.Path)
	case e.Current.IsZero():
		return fmt.Sprintf("%s was removed since it was read", e.Path)
	default:
		return fmt.Sprintf("%s changed since it was read", e.Path)
	}
}

// Is makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// Snapshot is a file as margin read it: the base of a later Write.
type Snapshot struct {
	Path        string // vault-relative, cleaned
	Content     []byte
	Fingerprint Fingerprint
}

// Root is a vault directory opened for reading and writing. Every path it is
// given is vault-relative and resolved inside the vault by os.Root, so `..`,
// absolute paths and symlinks that lead out are refused with ErrOutsideVault.
// A Root is safe for concurrent use.
type Root struct {
	root    *os.Root
	dir     string // absolute vault directory as opened
	realDir string // dir with symlinks evaluated, so Rel accepts either spelling
	// escapes is os.Root's (unexported) "path escapes from parent" error,
	// captured at Open so escapes are recognised by identity, not by message.
	escapes error

	// commitMu serialises the final re-check and rename, so two margin writers
	// holding the same base cannot both pass the check.
	commitMu sync.Mutex

	own *ownWrites

	recorder recorderSlot // the history of margin's writes (SetRecorder)
}

// Open opens the vault at dir.
func Open(dir string) (*Root, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("opening vault %s: %w", dir, err)
	}
	resolved, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("opening vault %s: %w", dir, err)
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("opening vault %s: %w", dir, err)
	}
	var pe *os.PathError
	if _, err := root.Stat(".."); !errors.As(err, &pe) {
		root.Close()
		return nil, fmt.Errorf("opening vault %s: os.Root did not refuse \"..\" (got %v)", dir, err)
	}
	return &Root{root: root, dir: abs, realDir: resolved, escapes: pe.Err, own: newOwnWrites()}, nil
}

// Close releases the vault directory.
func (r *Root) Close() error { return r.root.Close() }

// Dir is the absolute path of the vault directory.
func (r *Root) Dir() string { return r.dir }

// Read reads a file for a later compare-and-swap Write. A missing file is an
// error matching fs.ErrNotExist; to create it, Write with a zero base.
func (r *Root) Read(name string) (Snapshot, error) {
	p, err := Clean(name)
	if err != nil {
		return Snapshot{}, fmt.Errorf("reading %s: %w", name, err)
	}
	cur, err := r.onDisk(p)
	if err != nil {
		return Snapshot{}, fmt.Errorf("reading %s: %w", p, err)
	}
	if !cur.exists {
		return Snapshot{}, fmt.Errorf("reading %s: %w", p, fs.ErrNotExist)
	}
	return Snapshot{Path: p, Content: cur.content, Fingerprint: cur.fp}, nil
}

// Stat describes a file or directory inside the vault, following symlinks
// that stay inside it.
func (r *Root) Stat(name string) (fs.FileInfo, error) {
	p, err := Clean(name)
	if err != nil {
		return nil, fmt.Errorf("stat %s: %w", name, err)
	}
	info, err := r.root.Stat(p)
	if err != nil {
		return nil, r.classify(err)
	}
	return info, nil
}

// ReadFile reads a file inside the vault, for callers that will not write it
// back (the scanner); Read also returns the fingerprint a Write needs.
func (r *Root) ReadFile(name string) ([]byte, error) {
	p, err := Clean(name)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	b, err := r.root.ReadFile(p)
	if err != nil {
		return nil, r.classify(err)
	}
	return b, nil
}

// ReadDir lists a folder inside the vault, sorted by name, following
// symlinks that stay inside it: readers of margin's own folders (the
// template versions, the query domains) list through the Root like they
// read, so a folder linked out of the vault is refused, not listed.
func (r *Root) ReadDir(name string) ([]fs.DirEntry, error) {
	p, err := Clean(name)
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", name, err)
	}
	entries, err := fs.ReadDir(r.root.FS(), p)
	if err != nil {
		return nil, r.classify(err)
	}
	return entries, nil
}

// OpenRead opens a file inside the vault for reading, following symlinks
// that stay inside it, so that its caller can stat and read it through one
// handle (the scanner: resolving a path inside the vault costs a system call
// per folder, so stat then read costs twice that). It does not wait on a
// FIFO or device: the caller's Stat tells what it opened.
func (r *Root) OpenRead(name string) (*os.File, error) {
	p, err := Clean(name)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	f, err := r.root.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, r.classify(err)
	}
	return f, nil
}

// Create writes a new file, creating its parent directories; it refuses with
// a *ConflictError if the file already exists.
func (r *Root) Create(name string, content []byte) (Fingerprint, error) {
	return r.Write(name, "", content)
}

// Write replaces a file atomically if, and only if, it still has the
// fingerprint base; a zero base means the file must not exist yet. Otherwise it
// returns a *ConflictError and leaves the file alone. The file keeps its mode;
// a symlink to a note inside the vault stays a symlink and its target is
// written. On any error the original is untouched and no temp file remains
// (a user's save that lands while margin writes is put back; on Linux it is
// never lost, see replace).
//
// It returns the fingerprint of content, which IsOwnWrite then recognises.
// The one error after which the new content is in place is a failure to sync
// the directory; the fingerprint is returned with it.
func (r *Root) Write(name string, base Fingerprint, content []byte) (Fingerprint, error) {
	return r.WriteContext(context.Background(), name, base, content)
}

// WriteContext is Write, with ctx naming its cause in the history of
// margin's writes (WithCause).
func (r *Root) WriteContext(ctx context.Context, name string, base Fingerprint, content []byte) (Fingerprint, error) {
	p, err := Clean(name)
	if err != nil {
		return "", fmt.Errorf("writing %s: %w", name, err)
	}
	fp, err := r.write(ctx, p, base, content, nil)
	if err != nil {
		return fp, fmt.Errorf("writing %s: %w", p, err)
	}
	return fp, nil
}

func (r *Root) write(ctx context.Context, p string, base Fingerprint, content []byte, parts []Part) (Fingerprint, error) {
	target, err := r.resolveLinks(p)
	if err != nil {
		return "", err
	}
	cur, err := r.onDisk(target)
	if err != nil {
		return "", err
	}
	if err := cur.check(p, base); err != nil {
		return "", err
	}

	dir := path.Dir(target)
	if !cur.exists {
		if err := r.root.MkdirAll(dir, 0o755); err != nil {
			return "", r.classify(err)
		}
	}
	tmp, err := r.writeTemp(dir, content, cur)
	if err != nil {
		return "", err
	}
	fp := FingerprintOf(content)
	done, err := r.begin(ctx, Record{Path: p, Before: cur.content, Existed: cur.exists, After: content, Parts: parts})
	if err != nil {
		r.root.Remove(tmp)
		return "", fmt.Errorf("recording the write in margin's history: %w", err)
	}
	if err := r.commit(p, target, tmp, base, fp, cur.exists); err != nil {
		// A save held in the temp file means margin's text is in place.
		done(errors.Is(err, errHeldInTemp))
		if !errors.Is(err, errHeldInTemp) {
			r.root.Remove(tmp) // best effort: the commit already failed, and a stray temp file is ignored by the watcher
		}
		return "", err
	}
	done(true)
	if err := r.syncDir(dir); err != nil {
		// The new content is in place; only its durability is in doubt.
		return fp, err
	}
	return fp, nil
}

// Test hooks: testHookBeforeCommit runs after the temp file is complete and
// before the final re-check, testHookBeforeSwap after that re-check passed
// and before the temp file is swapped in, to stage a concurrent user edit or
// a failure at the last moment.
var testHookBeforeCommit, testHookBeforeSwap func() error

// testHookAfterSwap runs right after the temp file was swapped in, before
// what it replaced is checked, to stage a save landing just after.
var testHookAfterSwap func()

// commit re-checks the base right before swapping the temp file in. A save
// landing between that re-check and the swap is not lost: replacing an
// existing file checks what the swap took out and puts a save back (see
// replace; a plain rename, with that window, only where the filesystem has
// no atomic exchange). Creating a new file has no window: it is a hard link,
// which fails if the name appeared in the meantime.
func (r *Root) commit(p, target, tmp string, base, fp Fingerprint, exists bool) error {
	if testHookBeforeCommit != nil {
		if err := testHookBeforeCommit(); err != nil {
			return err
		}
	}
	r.commitMu.Lock()
	defer r.commitMu.Unlock()

	cur, err := r.onDisk(target)
	if err != nil {
		return err
	}
	if err := cur.check(p, base); err != nil {
		return err
	}
	if testHookBeforeSwap != nil {
		if err := testHookBeforeSwap(); err != nil {
			return err
		}
	}
	// Remember before the rename: the watcher may see the new file before
	// this function returns.
	r.own.remember(p, fp)
	if target != p {
		r.own.remember(target, fp)
	}
	if err := r.swapIn(p, tmp, target, base, fp, exists); err != nil {
		r.own.forget(p, fp)
		if target != p {
			r.own.forget(target, fp)
		}
		return err
	}
	return nil
}

func (r *Root) swapIn(p, tmp, target string, base, fp Fingerprint, exists bool) error {
	if exists {
		return r.replace(p, target, tmp, base, fp)
	}
	err := r.root.Link(tmp, target)
	switch {
	case err == nil:
		r.root.Remove(tmp) // the content is committed; a leftover temp name is only clutter
		return nil
	case errors.Is(err, fs.ErrExist):
		cur, cerr := r.onDisk(target)
		if cerr != nil {
			return cerr
		}
		return &ConflictError{Path: p, Current: cur.fp}
	case errors.Is(err, errors.ErrUnsupported), errors.Is(err, syscall.EPERM), errors.Is(err, syscall.ENOTSUP):
		// Filesystems without hard links (FAT, some network mounts): fall
		// back to rename, with the same window as replacing a file.
		return r.classify(r.root.Rename(tmp, target))
	default:
		return r.classify(err)
	}
}

// writeTemp writes content to a new hidden file in dir (see IsTempName),
// synced to disk and with the mode of the file it will replace.
func (r *Root) writeTemp(dir string, content []byte, cur diskFile) (string, error) {
	var (
		name string
		f    *os.File
		err  error
	)
	for range 5 { // a collision of 64 random bits means something else is wrong
		name = path.Join(dir, tempName())
		f, err = r.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return "", r.classify(err)
	}
	fail := func(err error) (string, error) {
		f.Close()
		r.root.Remove(name)
		return "", err
	}
	if _, err := f.Write(content); err != nil {
		return fail(err)
	}
	if cur.exists {
		// OpenFile's mode is filtered by the umask; the original's is not.
		if err := f.Chmod(cur.mode); err != nil {
			return fail(err)
		}
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		r.root.Remove(name)
		return "", err
	}
	return name, nil
}

func (r *Root) syncDir(dir string) error {
	d, err := r.root.Open(dir)
	if err != nil {
		return fmt.Errorf("syncing directory: %w", r.classify(err))
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
		// EINVAL/ENOTSUP: the filesystem cannot sync directories at all.
		return fmt.Errorf("syncing directory: %w", err)
	}
	return nil
}

const tempPrefix, tempSuffix = ".margin-", ".tmp"

// tempName names a temp file after the writing process, so that one left
// behind by a process that died (kill -9, power loss) can be told from one
// another margin process is writing right now (RemoveStaleTemp).
func tempName() string {
	var b [8]byte
	rand.Read(b[:])
	return tempPrefix + strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(b[:]) + tempSuffix
}

// RemoveStaleTemp removes the temp file name (vault-relative, see
// IsTempName) if the process that wrote it is gone: a write it never
// finished, whose target is untouched. It reports whether it removed it.
func (r *Root) RemoveStaleTemp(name string) (bool, error) {
	p, err := Clean(name)
	if err != nil {
		return false, err
	}
	base := path.Base(p)
	if !IsTempName(base) || writerAlive(base) {
		return false, nil
	}
	if err := r.root.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, r.classify(err)
	}
	return true, nil
}

// writerAlive reports whether the process named in a temp file's name may
// still be writing it. A name without a pid is from an older margin.
func writerAlive(base string) bool {
	pidText, _, ok := strings.Cut(strings.TrimPrefix(base, tempPrefix), "-")
	pid, err := strconv.Atoi(pidText)
	if !ok || err != nil || pid <= 0 {
		return false
	}
	if pid == os.Getpid() {
		return true
	}
	proc, err := os.FindProcess(pid)
	if err != nil {
		return false // Windows: no such process
	}
	// Signal 0 only checks: a process of another user answers EPERM.
	err = proc.Signal(syscall.Signal(0))
	return !errors.Is(err, os.ErrProcessDone) && !errors.Is(err, syscall.ESRCH)
}

// IsTempName reports whether a file name (base name, not a path) is one of
// the temp files Write creates beside its target; the watcher ignores them.
func IsTempName(base string) bool {
	return strings.HasPrefix(base, tempPrefix) && strings.HasSuffix(base, tempSuffix)
}

// diskFile is what is on disk at a path right now.
type diskFile struct {
	exists  bool
	content []byte
	fp      Fingerprint
	mode    fs.FileMode
}

// ErrBusy is matched by the error of a read or write of a file another
// program kept open for writing longer than margin waits (busyWait). It is
// a conflict: nothing was written.
var ErrBusy = fmt.Errorf("%w: another program is writing it", ErrConflict)

// errWriting: a file is open for writing right now (see leaseRead).
var errWriting = errors.New("open for writing")

// busyWait bounds how long onDisk waits for a writer to finish.
const busyWait = 2 * time.Second

// onDisk reads what is on disk at a path right now. A file another program
// has open for writing may be half saved (an in-place save truncates, then
// writes): onDisk waits for the writer to close it rather than take half
// a save as the file, which would make every write based on it stale.
func (r *Root) onDisk(p string) (diskFile, error) {
	wait, deadline := 100*time.Microsecond, time.Now().Add(busyWait)
	for {
		cur, busy, err := r.readOnce(p)
		if err != nil || !busy {
			return cur, err
		}
		if time.Now().After(deadline) {
			return diskFile{}, fmt.Errorf("%s: %w", p, ErrBusy)
		}
		time.Sleep(wait)
		wait = min(2*wait, 50*time.Millisecond)
	}
}

// readOnce reads a file whole, or says it is busy: open for writing by
// another program, or changed while it was read. Where leases exist (Linux)
// the read holds one, which proves no writer had it open and makes new
// writers wait until the read is done. Elsewhere a changed size or
// modification time is the only sign, which misses a writer that paused.
func (r *Root) readOnce(p string) (cur diskFile, busy bool, err error) {
	f, err := r.root.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return diskFile{}, false, nil
	}
	if err != nil {
		return diskFile{}, false, r.classify(err)
	}
	defer f.Close() // also releases the lease
	info, err := f.Stat()
	if err != nil {
		return diskFile{}, false, err
	}
	if !info.Mode().IsRegular() {
		return diskFile{}, false, fmt.Errorf("%s is not a regular file", p)
	}
	leased, err := leaseRead(f)
	if errors.Is(err, errWriting) {
		return diskFile{}, true, nil
	}
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, f); err != nil {
		return diskFile{}, false, err
	}
	if !leased {
		after, err := f.Stat()
		if err != nil {
			return diskFile{}, false, err
		}
		if after.Size() != info.Size() || !after.ModTime().Equal(info.ModTime()) || int64(buf.Len()) != after.Size() {
			return diskFile{}, true, nil
		}
	}
	return diskFile{exists: true, content: buf.Bytes(), fp: FingerprintOf(buf.Bytes()), mode: info.Mode().Perm()}, false, nil
}

func (c diskFile) check(p string, base Fingerprint) error {
	if c.fp != base { // zero for a missing file, so a zero base matches only absence
		return &ConflictError{Path: p, Base: base, Current: c.fp}
	}
	return nil
}

// maxLinkHops bounds symlink chains as the kernel does (Linux ELOOP at 40).
const maxLinkHops = 40

// resolveLinks follows symlinks in the last element of p to the file they
// name, so a write replaces the linked note rather than the link itself.
// Links leading out of the vault are refused.
func (r *Root) resolveLinks(p string) (string, error) {
	for range maxLinkHops {
		info, err := r.root.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) || (err == nil && info.Mode()&fs.ModeSymlink == 0) {
			return p, nil
		}
		if err != nil {
			return "", r.classify(err)
		}
		dest, err := r.root.Readlink(p)
		if err != nil {
			return "", r.classify(err)
		}
		if filepath.IsAbs(dest) {
			if p, err = r.Rel(dest); err != nil {
				return "", err
			}
			continue
		}
		if p, err = Clean(path.Join(path.Dir(p), filepath.ToSlash(dest))); err != nil {
			return "", err
		}
	}
	return "", fmt.Errorf("%s: too many levels of symbolic links", p)
}

// classify turns os.Root's escape error into ErrOutsideVault.
func (r *Root) classify(err error) error {
	if err != nil && errors.Is(err, r.escapes) {
		return fmt.Errorf("%w: %w", ErrOutsideVault, err)
	}
	return err
}

// Reader opens files for reading like OpenRead, keeping each folder it has
// resolved open, so that reading many files of the same folders (a scan)
// resolves every folder once instead of once a file. Whatever it cannot
// open in a kept folder (a symlink leading out of that folder, a missing
// file) it opens through the vault again, so it opens what OpenRead opens
// and fails as OpenRead fails. A folder renamed while the Reader is open is
// still read under its old path: use a Reader for one pass, then Close it.
type Reader struct {
	r    *Root
	mu   sync.Mutex
	dirs map[string]*os.Root // nil: the folder could not be opened
}

// NewReader returns a Reader over the vault.
func (r *Root) NewReader() *Reader {
	return &Reader{r: r, dirs: make(map[string]*os.Root)}
}

// OpenRead opens a file inside the vault for reading; see Root.OpenRead.
func (rd *Reader) OpenRead(name string) (*os.File, error) {
	p, err := Clean(name)
	if err != nil {
		return rd.r.OpenRead(name)
	}
	dir, base := path.Split(p)
	if dir != "" {
		if d := rd.dir(dir); d != nil {
			if f, err := d.OpenFile(base, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
				return f, nil
			}
		}
	}
	return rd.r.OpenRead(p)
}

func (rd *Reader) dir(dir string) *os.Root {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	d, ok := rd.dirs[dir]
	if !ok {
		d, _ = rd.r.root.OpenRoot(dir)
		rd.dirs[dir] = d
	}
	return d
}

// Close closes the folders the Reader kept open.
func (rd *Reader) Close() error {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	var errs []error
	for dir, d := range rd.dirs {
		if d != nil {
			errs = append(errs, d.Close())
		}
		delete(rd.dirs, dir)
	}
	return errors.Join(errs...)
}
