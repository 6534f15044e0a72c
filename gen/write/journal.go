package write

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

const (
	// journalName is the commit journal in the target directory.
	journalName = ".normgen-journal"
	// backupDir, inside the temporary directory, holds copies of the
	// files a commit replaces or removes.
	backupDir = ".old"
	// journalHeader starts every journal; a journal without it (or
	// without the end line) was not written by this code.
	journalHeader = "normgen journal 1"
)

type direction string

const (
	forward direction = "forward" // put the new files in place
	back    direction = "back"    // put the old files back
)

type op string

const (
	opReplace op = "replace" // an old generated file is replaced
	opCreate  op = "create"  // a new file where there was none
	opRemove  op = "remove"  // a stale generated file is removed
)

type entry struct {
	op   op
	name string
}

// journal describes one commit: which files change, where the new
// contents (tmp/NAME) and the old ones (tmp/.old/NAME) are, and in which
// direction the commit is being carried out. Every step of apply can be
// repeated: what is already done is recognized and skipped, so the
// journal can be replayed after a kill at any instant.
type journal struct {
	dir, tmp string // tmp is absolute or relative like dir
	state    direction
	entries  []entry
}

func (j *journal) path() string { return filepath.Join(j.dir, journalName) }

func (j *journal) encode() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\nstate %s\ntmp %s\n", journalHeader, j.state, strconv.Quote(filepath.Base(j.tmp)))
	for _, e := range j.entries {
		fmt.Fprintf(&b, "%s %s\n", e.op, strconv.Quote(e.name))
	}
	b.WriteString("end\n")
	return b.Bytes()
}

// save writes the journal into tmp, fsyncs it and renames it into dir,
// then fsyncs dir: the journal in dir is always whole, old or new.
func (j *journal) save() error {
	if err := step("journal", string(j.state)); err != nil {
		return fmt.Errorf("cannot write the journal %s: %w", j.path(), err)
	}
	next := filepath.Join(j.tmp, journalName+"."+string(j.state))
	os.Remove(next)
	if err := writeFile(next, j.encode()); err != nil {
		return fmt.Errorf("cannot write the journal %s: %w", j.path(), err)
	}
	if err := os.Rename(next, j.path()); err != nil {
		return fmt.Errorf("cannot write the journal %s: %w", j.path(), unwrapLink(err))
	}
	if err := syncDir(j.dir); err != nil {
		return fmt.Errorf("cannot write the journal %s: %w", j.path(), err)
	}
	return nil
}

// loadJournal reads dir's journal; ok is false when there is none.
func loadJournal(dir string) (j *journal, ok bool, err error) {
	path := filepath.Join(dir, journalName)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, true, fmt.Errorf("cannot read the journal %s: %w", path, unwrapPath(err))
	}
	bad := func(why string) error {
		return fmt.Errorf("the journal %s of an interrupted normgen commit is damaged (%s); restore the package from version control, then remove it and the %s* directories", path, why, tempPrefix)
	}
	j = &journal{dir: dir}
	sc := bufio.NewScanner(bytes.NewReader(data))
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) < 4 || lines[0] != journalHeader || lines[len(lines)-1] != "end" {
		return nil, true, bad("no header or end line")
	}
	for _, line := range lines[1 : len(lines)-1] {
		key, arg, _ := strings.Cut(line, " ")
		switch key {
		case "state":
			j.state = direction(arg)
			if j.state != forward && j.state != back {
				return nil, true, bad("state " + arg)
			}
			continue
		}
		name, err := strconv.Unquote(arg)
		if err != nil || name == "" || name != filepath.Base(name) || name == "." || name == ".." {
			return nil, true, bad("line " + strconv.Quote(line))
		}
		switch op(key) {
		case "tmp":
			if !strings.HasPrefix(name, tempPrefix) {
				return nil, true, bad("line " + strconv.Quote(line))
			}
			j.tmp = filepath.Join(dir, name)
		case opReplace, opCreate, opRemove:
			j.entries = append(j.entries, entry{op(key), name})
		default:
			return nil, true, bad("line " + strconv.Quote(line))
		}
	}
	if j.state == "" || j.tmp == "" {
		return nil, true, bad("no state or tmp line")
	}
	return j, true, nil
}

// settle carries the commit through: forward, and if that fails, back
// (the journal is first rewritten to say so, so that a kill during the
// roll-back cannot be replayed forward). It returns the cause of a roll
// back (nil when the journal already said back), and stuck when the
// directory could not be settled: then the journal and tmp are kept for
// the next run.
func (j *journal) settle() (rolledBack bool, cause, stuck error) {
	if j.state == forward {
		cause = j.apply()
		if cause == nil {
			j.finish()
			return false, nil, nil
		}
		j.state = back
		if err := j.save(); err != nil {
			return true, cause, fmt.Errorf("%w; restoring the previous files also failed (%v): the next normgen run will complete the commit (journal %s)", cause, err, j.path())
		}
	}
	if err := j.apply(); err != nil {
		if cause == nil {
			cause = errors.New("an interrupted roll back")
		}
		return true, cause, fmt.Errorf("%w; restoring the previous files also failed (%v): they are in %s; the next normgen run will retry (journal %s)", cause, err, filepath.Join(j.tmp, backupDir), j.path())
	}
	j.finish()
	return true, cause, nil
}

// finish ends a settled commit: the journal goes first (the package is
// whole without it), then the temporary directory. A kill in between
// leaves a temporary directory that the next run removes.
func (j *journal) finish() {
	step("unjournal", "")
	if os.Remove(j.path()) == nil {
		syncDir(j.dir)
	}
	step("cleanup", "")
	os.RemoveAll(j.tmp)
}

// apply carries out every entry in the journal's direction, skipping
// what is done, then fsyncs dir. Going back, entries are undone in
// reverse order.
func (j *journal) apply() error {
	if j.state == forward {
		for _, e := range j.entries {
			if err := j.forward(e); err != nil {
				return err
			}
		}
		if err := step("syncdir", ""); err != nil {
			return fmt.Errorf("cannot sync %s: %w", j.dir, err)
		}
		return syncDir(j.dir)
	}
	var errs []error
	for i := len(j.entries) - 1; i >= 0; i-- {
		errs = append(errs, j.back(j.entries[i]))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return syncDir(j.dir)
}

func (j *journal) forward(e entry) error {
	path := filepath.Join(j.dir, e.name)
	next := filepath.Join(j.tmp, e.name)
	prev := filepath.Join(j.tmp, backupDir, e.name)
	switch e.op {
	case opReplace, opCreate:
		if !exists(next) {
			return nil // moved into place already
		}
		if sameFile(next, path) {
			return os.Remove(next) // a link+unlink rename was cut short
		}
		if err := step("rename", e.name); err != nil {
			return fmt.Errorf("cannot move %s into place: %w", path, err)
		}
		if e.op == opCreate || !exists(path) {
			// Never over a file that appeared since the scan.
			if err := renameNoReplace(next, path); err != nil {
				if errors.Is(err, fs.ErrExist) {
					return fmt.Errorf("%s appeared while normgen was writing; normgen did not write it and left it alone; move it away and run normgen again", path)
				}
				return fmt.Errorf("cannot move %s into place: %w", path, err)
			}
			return nil
		}
		if err := sameAsBackup(path, prev); err != nil {
			return err
		}
		if err := os.Rename(next, path); err != nil {
			return fmt.Errorf("cannot move %s into place: %w", path, unwrapLink(err))
		}
	case opRemove:
		if !exists(path) {
			return nil
		}
		if err := step("remove", e.name); err != nil {
			return fmt.Errorf("cannot remove stale %s: %w", path, err)
		}
		if err := sameAsBackup(path, prev); err != nil {
			return err
		}
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("cannot remove stale %s: %w", path, unwrapPath(err))
		}
	}
	return nil
}

func (j *journal) back(e entry) error {
	path := filepath.Join(j.dir, e.name)
	next := filepath.Join(j.tmp, e.name)
	prev := filepath.Join(j.tmp, backupDir, e.name)
	switch e.op {
	case opReplace:
		if exists(next) || !exists(prev) {
			return nil // never replaced, or restored already
		}
		if err := step("restore", e.name); err != nil {
			return err
		}
		switch _, ok, err := readOurs(path); {
		case err != nil && ok:
			return fmt.Errorf("cannot restore %s: a file normgen did not write took its place; the previous contents are in %s", path, prev)
		case err != nil:
			return err
		case !ok:
			return renameNoReplace(prev, path)
		}
		return unwrapLink(os.Rename(prev, path))
	case opCreate:
		if exists(next) {
			if sameFile(next, path) {
				return os.Remove(path) // a link+unlink rename was cut short
			}
			return nil
		}
		if err := step("restore", e.name); err != nil {
			return err
		}
		if _, ok, err := readOurs(path); ok && err == nil {
			return unwrapPath(os.Remove(path))
		}
	case opRemove:
		if exists(path) || !exists(prev) {
			return nil
		}
		if err := step("restore", e.name); err != nil {
			return err
		}
		return renameNoReplace(prev, path)
	}
	return nil
}

// sameAsBackup re-reads path right before it is replaced or removed and
// refuses if it is no longer what the scan saw (kept in backup): a file
// put there meanwhile, by the user or a tool, is not normgen's to
// destroy.
func sameAsBackup(path, backup string) error {
	want, err := os.ReadFile(backup)
	if err != nil {
		return fmt.Errorf("cannot read the copy of %s: %w", path, unwrapPath(err))
	}
	got, ok, err := readOurs(path)
	switch {
	case err != nil && ok:
		return fmt.Errorf("%s was replaced while normgen was writing by a file normgen did not write; normgen left it alone; move it away and run normgen again", path)
	case err != nil:
		return err
	case !bytes.Equal(got, want):
		return fmt.Errorf("%s changed while normgen was writing; normgen left it alone; run normgen again", path)
	}
	return nil
}

func sameFile(a, b string) bool {
	fa, err1 := os.Lstat(a)
	fb, err2 := os.Lstat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// recoverDir settles an interrupted commit in dir and removes temporary
// directories left by killed runs. The caller holds the lock, so none of
// them belongs to a live run. It returns one line per thing found.
func recoverDir(dir string) (found []string, err error) {
	j, ok, err := loadJournal(dir)
	if err != nil {
		return nil, err
	}
	if ok {
		rolledBack, cause, stuck := j.settle()
		switch {
		case stuck != nil:
			return nil, fmt.Errorf("an interrupted normgen commit is pending in %s (journal %s) and could not be settled: %w", dir, j.path(), stuck)
		case !rolledBack:
			found = append(found, j.path()+": an interrupted normgen commit was pending; normgen completed it")
		case cause != nil:
			found = append(found, fmt.Sprintf("%s: an interrupted normgen commit was pending; normgen rolled it back (%v)", j.path(), cause))
		default:
			found = append(found, j.path()+": an interrupted normgen commit was pending; normgen rolled it back")
		}
	}
	for _, tmp := range tempDirs(dir) {
		if err := os.RemoveAll(tmp); err != nil {
			return found, fmt.Errorf("cannot remove %s, left by an interrupted normgen run: %w", tmp, unwrapPath(err))
		}
		found = append(found, tmp+": left by an interrupted normgen run; removed")
	}
	return found, nil
}

// tempDirs lists the temporary directories in dir.
func tempDirs(dir string) []string {
	entries, _ := os.ReadDir(dir)
	var tmps []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tempPrefix) {
			tmps = append(tmps, filepath.Join(dir, e.Name()))
		}
	}
	return tmps
}
