//go:build !linux

package write

func renameNoReplace(oldpath, newpath string) error {
	return linkRename(oldpath, newpath)
}
