//go:build unix

package write

import (
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// tryLock takes an flock(2) on the lock file; the kernel drops it when
// the process dies, so a killed run never leaves a lock held. It returns
// nil, nil when another process holds it.
func tryLock(path string) (func(), error) {
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, err
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				return nil, nil
			}
			return nil, err
		}
		// The holder removes the file before it unlocks: a lock on a file
		// no longer at path is no lock; try again on the new one.
		fi, err1 := f.Stat()
		pi, err2 := os.Stat(path)
		if err1 != nil || err2 != nil || !os.SameFile(fi, pi) {
			f.Close()
			continue
		}
		f.Truncate(0)
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
		return func() {
			step("unlock", "")
			os.Remove(path)
			f.Close()
		}, nil
	}
}
