//go:build windows

package write

import (
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/windows"
)

// tryLock locks a byte of the lock file far past its end (so that the
// pid stays readable) with LockFileEx, which Windows drops when the
// process dies. The file is removed when it can be; it is ignored
// anyway.
func tryLock(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	ol := &windows.Overlapped{OffsetHigh: 1}
	err = windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, ol)
	if err != nil {
		f.Close()
		if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
			return nil, nil
		}
		return nil, err
	}
	f.Truncate(0)
	f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return func() {
		step("unlock", "")
		f.Close()
		os.Remove(path)
	}, nil
}
