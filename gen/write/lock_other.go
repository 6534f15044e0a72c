//go:build !unix && !windows

package write

import (
	"errors"
	"io/fs"
	"os"
	"strconv"
)

// tryLock creates the lock file exclusively. Without a lock the kernel
// drops, a killed run leaves it: the timeout message names it.
func tryLock(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	f.WriteString(strconv.Itoa(os.Getpid()) + "\n")
	f.Close()
	return func() {
		step("unlock", "")
		os.Remove(path)
	}, nil
}
