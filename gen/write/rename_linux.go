package write

import (
	"errors"

	"golang.org/x/sys/unix"
)

// renameNoReplace renames oldpath to newpath, failing with an error that
// matches fs.ErrExist if newpath exists: the kernel checks, so a file
// created at any moment before is never replaced.
func renameNoReplace(oldpath, newpath string) error {
	if linkOnly {
		return linkRename(oldpath, newpath)
	}
	err := unix.Renameat2(unix.AT_FDCWD, oldpath, unix.AT_FDCWD, newpath, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOTSUP) {
		return linkRename(oldpath, newpath) // old kernel or a file system without the flag
	}
	return err
}
