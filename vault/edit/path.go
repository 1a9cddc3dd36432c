package edit

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"runtime"
	"strings"
)

// ErrOutsideVault refuses a path that names something outside the vault: an
// absolute path, a `..` escape, or a symlink that leads out.
var ErrOutsideVault = errors.New("outside the vault")

// ErrInvalidPath refuses a path that cannot name a note at all: empty, with
// a NUL byte, or naming the vault itself. It is bad input, not an escape.
var ErrInvalidPath = errors.New("invalid path")

// Clean normalises a user-supplied vault-relative path: forward slashes, no
// `.` or `..` elements, no leading or trailing slash. Absolute paths and paths
// that climb out of the vault are refused with ErrOutsideVault; Clean is
// lexical, so symlinks are Root's business.
func Clean(vaultRel string) (string, error) {
	switch {
	case vaultRel == "":
		return "", fmt.Errorf("%w: empty", ErrInvalidPath)
	case strings.IndexByte(vaultRel, 0) >= 0:
		return "", fmt.Errorf("%w %q: it contains a NUL byte", ErrInvalidPath, vaultRel)
	}
	s := filepath.ToSlash(vaultRel)
	if path.IsAbs(s) || filepath.IsAbs(vaultRel) || filepath.VolumeName(vaultRel) != "" {
		return "", fmt.Errorf("path %q is absolute: %w", vaultRel, ErrOutsideVault)
	}
	c := path.Clean(s)
	switch {
	case c == ".." || strings.HasPrefix(c, "../"):
		return "", fmt.Errorf("path %q: %w", vaultRel, ErrOutsideVault)
	case c == ".":
		return "", fmt.Errorf("%w %q: it names the vault itself", ErrInvalidPath, vaultRel)
	}
	return c, nil
}

// Rel converts an absolute path or a file:// URI (as an editor sends in LSP
// messages) to a cleaned vault-relative path. A relative path is taken to be
// vault-relative already. Anything outside the vault is refused with
// ErrOutsideVault.
func (r *Root) Rel(absPath string) (string, error) {
	p, err := localPath(absPath)
	if err != nil {
		return "", err
	}
	if !filepath.IsAbs(p) {
		return Clean(p)
	}
	p = filepath.Clean(p)
	for _, dir := range []string{r.dir, r.realDir} {
		if rel, ok := inside(dir, p); ok {
			return Clean(rel)
		}
	}
	// The path may reach the vault through a symlinked directory (say
	// /tmp → /private/tmp); the file itself may not exist yet.
	if parent, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
		if rel, ok := inside(r.realDir, filepath.Join(parent, filepath.Base(p))); ok {
			return Clean(rel)
		}
	}
	return "", fmt.Errorf("path %q: %w", absPath, ErrOutsideVault)
}

// inside returns p relative to dir, if p is dir or inside it.
func inside(dir, p string) (string, bool) {
	rel, err := filepath.Rel(dir, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return rel, true
}

// localPath decodes a file:// URI into an OS path; other strings pass through.
func localPath(s string) (string, error) {
	if !strings.HasPrefix(strings.ToLower(s), "file:") {
		return s, nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("parsing URI %q: %w", s, err)
	}
	if u.Host != "" && u.Host != "localhost" {
		return "", fmt.Errorf("URI %q names another host: %w", s, ErrOutsideVault)
	}
	p := u.Path
	if runtime.GOOS == "windows" && len(p) >= 3 && p[0] == '/' && p[2] == ':' {
		p = p[1:] // file:///C:/x has the path /C:/x
	}
	return filepath.FromSlash(p), nil
}
