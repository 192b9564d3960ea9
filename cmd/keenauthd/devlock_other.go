//go:build !unix

package main

import (
	"errors"
	"fmt"
	"os"
)

// lockDataDir creates the file at path exclusively, so that one keenauthd
// dev at most uses a data directory, and removes it on unlock. After a
// crash the file stays: remove it by hand once no keenauthd dev runs.
func lockDataDir(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("lock %s exists", path)
	}
	if err != nil {
		return nil, err
	}
	_, _ = fmt.Fprintf(f, "%d\n", os.Getpid())
	f.Close()
	return func() { _ = os.Remove(path) }, nil
}
