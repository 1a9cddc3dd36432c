package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// stateIgnore is the state dir's own .gitignore: everything in it, itself
// included, stays out of git wherever the vault sits in a repository, and
// the user's .gitignore is never touched.
const stateIgnore = "*\n"

// OpenDir makes sure rel, margin's state dir, is a real folder inside the
// vault at vaultDir, creating it and its .gitignore if need be, and returns
// its absolute path, the one its databases are opened by.
//
// SQLite opens files by path and follows symlinks, so the folder is checked
// through os.Root first: a symlink anywhere in rel, or in the folder itself
// (a database, a journal, a marker), is refused rather than followed, lest a
// cloned vault make margin write or delete files outside it.
func OpenDir(vaultDir, rel string) (string, error) {
	abs, err := filepath.Abs(vaultDir)
	if err != nil {
		return "", err
	}
	rel = filepath.ToSlash(filepath.Clean(rel))
	if !filepath.IsLocal(rel) || rel == "." {
		return "", fmt.Errorf("state dir %q: must be a folder inside the vault", rel)
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return "", fmt.Errorf("state dir: %w", err)
	}
	defer root.Close()
	refuse := func(p, why string) error {
		what := "state dir " + filepath.Join(abs, filepath.FromSlash(rel))
		if p != rel {
			what += ": " + filepath.Join(abs, filepath.FromSlash(p))
		}
		return fmt.Errorf("%s %s; margin keeps its state only in real files and folders inside the vault", what, why)
	}
	cur := ""
	for _, part := range strings.Split(rel, "/") {
		cur = path.Join(cur, part)
		fi, err := root.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			if err := root.Mkdir(cur, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return "", fmt.Errorf("state dir: %w", err)
			}
			fi, err = root.Lstat(cur) // another margin may have made it, or something else
		}
		switch {
		case err != nil:
			return "", fmt.Errorf("state dir: %w", err)
		case fi.Mode()&fs.ModeSymlink != 0:
			return "", refuse(cur, linkText(root, cur))
		case !fi.IsDir():
			return "", refuse(cur, "is not a folder")
		}
	}
	d, err := root.Open(rel)
	if err != nil {
		return "", fmt.Errorf("state dir: %w", err)
	}
	entries, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return "", fmt.Errorf("state dir: %w", err)
	}
	for _, e := range entries {
		if e.Type()&fs.ModeSymlink != 0 {
			p := path.Join(rel, e.Name())
			return "", refuse(p, linkText(root, p))
		}
	}
	if err := writeIgnore(root, path.Join(rel, ".gitignore")); err != nil {
		return "", fmt.Errorf("state dir: %w", err)
	}
	return filepath.Join(abs, filepath.FromSlash(rel)), nil
}

func linkText(root *os.Root, p string) string {
	if dest, err := root.Readlink(p); err == nil {
		return "is a symbolic link to " + dest
	}
	return "is a symbolic link"
}

// writeIgnore creates the state dir's .gitignore unless it exists: one the
// user changed is theirs.
func writeIgnore(root *os.Root, p string) error {
	f, err := root.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = f.WriteString(stateIgnore)
	return errors.Join(err, f.Close())
}
