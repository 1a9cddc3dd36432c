package vault

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
)

// ErrAmbiguous is a name that several task notes go by.
var ErrAmbiguous = errors.New("several tasks go by that name")

// FindTask resolves what a person calls a task to its note's path: the
// path in the vault (with or without .md, absolute or relative), or the
// note's name or title when only one task goes by it. A name that is no
// task wraps ErrNotFound, one that several are called wraps ErrAmbiguous.
func (v *Vault) FindTask(ctx context.Context, name string) (string, error) {
	p, err := v.Path(name)
	if err != nil {
		return "", err
	}
	tasks, err := v.Index().Tasks(ctx)
	if err != nil {
		return "", err
	}
	var matches []string
	for _, t := range tasks {
		stem := strings.TrimSuffix(path.Base(t.Path), ".md")
		switch {
		case t.Path == p || t.Path == p+".md":
			return t.Path, nil
		case strings.EqualFold(stem, name) || strings.EqualFold(t.Title, name):
			matches = append(matches, t.Path)
		}
	}
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		return "", fmt.Errorf("no task note %q: %w", name, ErrNotFound)
	}
	return "", fmt.Errorf("%s: %w: %s; give the path", name, ErrAmbiguous, strings.Join(matches, ", "))
}
