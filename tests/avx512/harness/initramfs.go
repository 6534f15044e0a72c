package harness

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// Initramfs builds an uncompressed initramfs: a cpio archive in the "newc"
// format that the Linux kernel unpacks into its root file system. Writing it
// here, rather than with cpio(1) from a staging tree, lets it hold device
// nodes without root privileges (mknod) and makes it byte-for-byte
// reproducible (fixed owners and times).
type Initramfs struct {
	entries map[string]entry
}

type entry struct {
	mode         uint32 // type and permission bits
	src          string // host file, for regular files
	data         []byte // contents, for regular files without src
	major, minor uint32 // for device nodes
}

const (
	modeDir  = 0o040000
	modeReg  = 0o100000
	modeChar = 0o020000
)

// NewInitramfs returns an archive holding /dev/console and /dev/null, which
// the kernel and the Go runtime need before anything is mounted.
func NewInitramfs() *Initramfs {
	a := &Initramfs{entries: map[string]entry{}}
	a.CharDevice("dev/console", 0o600, 5, 1)
	a.CharDevice("dev/null", 0o666, 1, 3)
	return a
}

// Dir adds a directory (and its parents).
func (a *Initramfs) Dir(name string) {
	name = clean(name)
	for d := name; d != "" && d != "."; d = path.Dir(d) {
		if _, ok := a.entries[d]; !ok {
			a.entries[d] = entry{mode: modeDir | 0o755}
		}
	}
}

// File adds the host file src as name, with permission bits perm.
func (a *Initramfs) File(name, src string, perm os.FileMode) {
	name = clean(name)
	a.Dir(path.Dir(name))
	a.entries[name] = entry{mode: modeReg | uint32(perm.Perm()), src: src}
}

// Bytes adds a file with the given contents.
func (a *Initramfs) Bytes(name string, data []byte, perm os.FileMode) {
	name = clean(name)
	a.Dir(path.Dir(name))
	a.entries[name] = entry{mode: modeReg | uint32(perm.Perm()), data: data}
}

// CharDevice adds a character device node.
func (a *Initramfs) CharDevice(name string, perm os.FileMode, major, minor uint32) {
	name = clean(name)
	a.Dir(path.Dir(name))
	a.entries[name] = entry{mode: modeChar | uint32(perm.Perm()), major: major, minor: minor}
}

// Tree adds the host directory src, recursively, as name. Only directories
// and regular files are taken; anything else is an error.
func (a *Initramfs) Tree(name, src string) error {
	a.Dir(name)
	return fs.WalkDir(os.DirFS(src), ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if rel == "." {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		target := path.Join(clean(name), rel)
		switch {
		case info.IsDir():
			a.Dir(target)
		case info.Mode().IsRegular():
			a.File(target, filepath.Join(src, filepath.FromSlash(rel)), info.Mode())
		default:
			return fmt.Errorf("%s: not a regular file or directory", filepath.Join(src, filepath.FromSlash(rel)))
		}
		return nil
	})
}

func clean(name string) string {
	return strings.TrimPrefix(path.Clean("/"+name), "/")
}

// WriteTo writes the archive: parents before children, in name order.
func (a *Initramfs) WriteTo(w io.Writer) (int64, error) {
	names := make([]string, 0, len(a.entries))
	for n := range a.entries {
		names = append(names, n)
	}
	sort.Strings(names) // "a" sorts before "a/b"
	cw := &countingWriter{w: bufio.NewWriterSize(w, 1<<20)}
	for i, n := range names {
		e := a.entries[n]
		if err := writeEntry(cw, uint32(i+1), n, e); err != nil {
			return cw.n, err
		}
	}
	if err := writeHeader(cw, 0, "TRAILER!!!", entry{}, 0); err != nil {
		return cw.n, err
	}
	return cw.n, cw.w.Flush()
}

func writeEntry(w *countingWriter, ino uint32, name string, e entry) error {
	if e.mode&0o170000 != modeReg {
		return writeHeader(w, ino, name, e, 0)
	}
	if e.src == "" {
		if err := writeHeader(w, ino, name, e, int64(len(e.data))); err != nil {
			return err
		}
		w.Write(e.data)
		return pad(w)
	}
	f, err := os.Open(e.src)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() > 0xffffffff {
		return fmt.Errorf("%s: too large for a newc archive", e.src)
	}
	if err := writeHeader(w, ino, name, e, st.Size()); err != nil {
		return err
	}
	n, err := io.Copy(w, f)
	if err != nil {
		return err
	}
	if n != st.Size() {
		return fmt.Errorf("%s: changed size while being archived", e.src)
	}
	return pad(w)
}

func writeHeader(w *countingWriter, ino uint32, name string, e entry, size int64) error {
	nlink := uint32(1)
	if e.mode&0o170000 == modeDir {
		nlink = 2
	}
	// magic, ino, mode, uid, gid, nlink, mtime, filesize, devmajor,
	// devminor, rdevmajor, rdevminor, namesize, check
	_, err := fmt.Fprintf(w, "070701%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%s\x00",
		ino, e.mode, 0, 0, nlink, 0, uint32(size), 0, 0, e.major, e.minor, len(name)+1, 0, name)
	if err != nil {
		return err
	}
	return pad(w)
}

// pad aligns the stream to 4 bytes, as newc requires after headers and data.
func pad(w *countingWriter) error {
	if r := w.n % 4; r != 0 {
		_, err := w.Write(make([]byte, 4-r))
		return err
	}
	return nil
}

type countingWriter struct {
	w *bufio.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
