//go:build !unix

package store

import (
	"errors"
	"os"
)

const oNoFollow = 0

var errWouldBlock = errors.New("would block")

// lockFile and shareFile have no lock across processes to take here:
// every process gets the lock, as if it ran alone.
func lockFile(*os.File) error { return nil }

func shareFile(*os.File) error { return nil }
