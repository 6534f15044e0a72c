package write

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// lockName is the lock file in the target directory.
const lockName = ".normgen-lock"

// LockTimeout is how long a writer waits for another one on the same
// directory before giving up.
var LockTimeout = 10 * time.Minute

// Stderr receives the message saying that a writer waits for another.
var Stderr io.Writer = os.Stderr

const lockPoll = 20 * time.Millisecond

// lock serializes normgen runs on dir: it returns once this process
// holds dir's lock, to be released by calling unlock.
func lock(dir string) (unlock func(), err error) {
	if err := step("lock", ""); err != nil {
		return nil, fmt.Errorf("cannot lock %s: %w", dir, err)
	}
	path := filepath.Join(dir, lockName)
	deadline := time.Now().Add(LockTimeout)
	said := false
	for {
		unlock, err := tryLock(path)
		if err != nil {
			return nil, fmt.Errorf("cannot lock %s (%s): %w", dir, path, unwrapPath(err))
		}
		if unlock != nil {
			return unlock, nil
		}
		if !said {
			fmt.Fprintf(Stderr, "normgen: waiting for another normgen writing %s (pid %s)\n", dir, holder(path))
			said = true
		}
		if time.Now().After(deadline) {
			return nil, &lockTimeout{fmt.Sprintf("gave up after %v waiting for another normgen writing %s (pid %s, lock %s); nothing was written", LockTimeout, dir, holder(path), path)}
		}
		time.Sleep(lockPoll)
	}
}

// holder is the pid the lock file names, or "unknown".
func holder(path string) string {
	data, _ := os.ReadFile(path)
	if pid := strings.TrimSpace(string(data)); pid != "" {
		return pid
	}
	return "unknown"
}

// linkRename renames without replacing where the kernel has no such
// rename: link(2) fails if newpath exists.
func linkRename(oldpath, newpath string) error {
	if err := os.Link(oldpath, newpath); err != nil {
		return unwrapLink(err)
	}
	step("unlink", filepath.Base(oldpath))
	return os.Remove(oldpath)
}

// linkOnly, set by tests, makes renameNoReplace use linkRename on Linux too.
var linkOnly bool

// lockTimeout is the error of a writer that gave up waiting.
type lockTimeout struct{ msg string }

func (e *lockTimeout) Error() string { return e.msg }
