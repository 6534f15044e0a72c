package spec

import (
	"cmp"
	"fmt"
	"go/token"
	"math"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/normgen/normgen/gen/target"
)

// Defaults of the optional kernel fields; REFERENCE.md documents them.
const (
	DefaultAxis    = "last"
	DefaultEpsilon = 1e-5 // PyTorch's LayerNorm default
	// RuntimeEpsilon is the epsilon value that makes eps an argument of
	// every entry point of the kernel instead of a constant.
	RuntimeEpsilon = "runtime"
)

// Limits on spec values. Each kernel and size becomes assembly for three
// instruction sets, so the counts bound the size of generated packages.
const (
	MaxHidden   = 1 << 20 // largest row length
	MaxSizes    = 64      // hidden sizes per kernel
	MaxKernels  = 64      // kernels per spec
	MaxNameLen  = 64      // package and kernel names
	MaxDocLen   = 500     // bytes of a kernel's doc
	minNormal32 = 0x1p-126

	packageAllowed = "a Go package name: a letter followed by letters, digits or _, not a Go keyword, lower case by convention, e.g. rmsnorm"
)

// Targets lists the instruction-set names a spec may use, in the order
// validated specs list them (the generator's dispatch preference order).
var Targets = target.Names()

// allowedTarget words Targets for messages.
var allowedTarget = strings.Join(Targets, ", ")

// Key lists, in the order REFERENCE.md and the messages give them.
var (
	fileKeys     = []string{"version", "package", "kernels"}
	kernelKeys   = []string{"name", "doc", "axis", "groups", "group_size", "mean", "statistic", "epsilon", "scale", "scale_offset", "shift", "affine_per", "residual", "save_stats", "backward", "running", "hidden", "storage", "targets"}
	runningKeys  = []string{"momentum", "convention"}
	residualKeys = []string{"alpha", "deepnorm", "store_sum"}
	deepnormKeys = []string{"encoder_layers", "decoder_layers", "side"}
)

// Storages lists the values of a kernel's storage, in REFERENCE.md's order.
var Storages = []string{"f32", "bf16", "f16"}

// storagesAllowed words Storages for messages.
const storagesAllowed = "f32 (float32), bf16 (bfloat16 bits in uint16) or f16 (IEEE binary16 bits in uint16)"

// Axes lists the values of a kernel's axis, in REFERENCE.md's order.
var Axes = []string{"last", "channels", "batch", "groups"}

// axesAllowed words Axes for messages.
const axesAllowed = "last (each row is H contiguous values), channels (the C channels at each position of [N, C, L]: ConvNeXt), batch (each channel over N and L: BatchNorm training) or groups (each group of channels over L: GroupNorm)"

// Conventions lists the running-statistics conventions of axis batch.
var Conventions = []string{"pytorch", "onnx"}

// DefaultStatistic is the statistic of a kernel whose spec leaves it
// out: the variance with the mean subtracted, else the mean square.
func DefaultStatistic(mean bool) string {
	if mean {
		return "variance"
	}
	return "rms"
}

// Stat is k's statistic, with the default for an empty one (a Kernel
// built in code rather than parsed).
func (k Kernel) Stat() string {
	if k.Statistic == "" {
		return DefaultStatistic(k.Mean)
	}
	return k.Statistic
}

// AffinePer lists the values of affine_per: per element of the row (the
// default) or per row.
var AffinePer = []string{"element", "row"}

// Sides lists the values of deepnorm's side.
var Sides = []string{"encoder", "decoder"}

// Statistics lists the values of a kernel's statistic, in REFERENCE.md's order.
var Statistics = []string{"variance", "rms", "l2", "none"}

// MaxLayers bounds DeepNorm's layer counts (DeepNet trained 1000 layers).
const MaxLayers = 100000

var (
	packageRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	kernelRE  = regexp.MustCompile(`^[A-Z][A-Za-z0-9_]*$`)
	integerRE = regexp.MustCompile(`^[-+]?[0-9][0-9_]*$`)
	// leadingZeroRE matches a decimal numeral with a leading zero (0.5 and
	// 0e3 have none, nor the 0x and 0o prefixes).
	leadingZeroRE = regexp.MustCompile(`^[-+]?0[0-9_]+([.eE].*)?$`)
	// numberRE matches what reads as a decimal number.
	numberRE = regexp.MustCompile(`^[-+]?([0-9][0-9_]*(\.[0-9_]*)?|\.[0-9_]+)([eE][-+]?[0-9]+)?$`)
)

// decoder turns the YAML tree into a File, checking every value where it
// is read so that each error points at the offending node.
type decoder struct {
	path  string
	names map[string]*yaml.Node // kernel names seen so far
	errs  []*Error              // the problems found so far
}

// add records a problem; decoding goes on where what follows does not
// depend on the value at fault, so that one run reports several.
func (d *decoder) add(e *Error) { d.errs = append(d.errs, e) }

// result is nil, the one error, or the errors in file order, at most
// MaxErrors of them and then one saying that more were left out.
func (d *decoder) result() error {
	switch len(d.errs) {
	case 0:
		return nil
	case 1:
		return d.errs[0]
	}
	errs := slices.Clone(d.errs)
	slices.SortStableFunc(errs, func(a, b *Error) int {
		if a.Line != b.Line {
			return cmp.Compare(a.Line, b.Line)
		}
		return cmp.Compare(a.Col, b.Col)
	})
	if len(errs) > MaxErrors {
		more := errs[MaxErrors]
		errs = append(errs[:MaxErrors], &Error{Path: d.path, Line: more.Line, Col: more.Col,
			Msg: fmt.Sprintf("too many errors (%d more left out); fix these first", len(d.errs)-MaxErrors)})
	}
	return Errors(errs)
}

func (d *decoder) errf(n *yaml.Node, format string, args ...any) *Error {
	return &Error{Path: d.path, Line: max(n.Line, 1), Col: max(n.Column, 1), Msg: fmt.Sprintf(format, args...)}
}

func pos(n *yaml.Node) Pos { return Pos{Line: n.Line, Col: n.Column} }

// fields is a mapping's pairs by key, checked: known keys only, each once.
type fields struct {
	m    *yaml.Node
	vals map[string]*yaml.Node
	keys map[string]*yaml.Node
}

// mapping checks that n is a mapping of the allowed keys; what names it in
// messages ("the spec", "kernel", "residual"). It returns the first
// problem; mappingAll, every one.
func (d *decoder) mapping(n *yaml.Node, what, example string, allowed []string) (*fields, *Error) {
	fs, errs := d.mappingAll(n, what, example, allowed)
	if len(errs) > 0 {
		return nil, errs[0]
	}
	return fs, nil
}

// mappingAll is mapping reporting each unknown or repeated key; the fields
// are nil when n is not a mapping of plain keys, else they hold the first
// occurrence of each allowed key, whatever the errors.
func (d *decoder) mappingAll(n *yaml.Node, what, example string, allowed []string) (*fields, []*Error) {
	if e := d.plain(n, what); e != nil {
		return nil, []*Error{e}
	}
	if n.Kind != yaml.MappingNode {
		return nil, []*Error{d.errf(n, "%s is %s; allowed: a mapping, e.g. %s", what, describe(n), example)}
	}
	fs := &fields{m: n, vals: map[string]*yaml.Node{}, keys: map[string]*yaml.Node{}}
	var errs []*Error
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.AliasNode {
			return nil, append(errs, d.errf(k, "alias *%s as a key; aliases are not supported in specs: write the key out", lit(k.Value)))
		}
		if k.Kind != yaml.ScalarNode {
			return nil, append(errs, d.errf(k, "%s as a key in %s; allowed keys: %s", describe(k), what, strings.Join(allowed, ", ")))
		}
		if first, ok := fs.keys[k.Value]; ok {
			errs = append(errs, d.errf(k, "key %s appears twice in %s (first at %d:%d); give each key once", quoteKey(k.Value), what, first.Line, first.Column))
			continue
		}
		if !contains(allowed, k.Value) {
			errs = append(errs, d.errf(k, "unknown key %s in %s%s; allowed keys: %s", quoteKey(k.Value), what, suggest(k.Value, allowed), strings.Join(allowed, ", ")))
			continue
		}
		fs.keys[k.Value] = k
		fs.vals[k.Value] = v
	}
	return fs, errs
}

// first reports whether the j-th key of mapping n is the first occurrence
// of an allowed key: the one fs holds.
func (fs *fields) first(j int) bool {
	k := fs.m.Content[j]
	return fs.keys[k.Value] == k
}

// plain rejects the YAML features a spec has no use for and that would
// make values depend on more than what is written at their position.
func (d *decoder) plain(n *yaml.Node, what string) *Error {
	if n.Kind == yaml.AliasNode {
		return d.errf(n, "%s is the alias *%s; aliases are not supported in specs: write the value out", what, lit(n.Value))
	}
	if t := n.ShortTag(); !strings.HasPrefix(t, "!!") {
		return d.errf(n, "%s has the tag %s; custom tags are not supported: remove it", what, lit(t))
	}
	return nil
}

// describe words a node's type and value for a "got" message.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.DocumentNode:
		return "a document"
	}
	v := n.Value
	if len(v) > 40 {
		v = v[:40] + "..."
	}
	switch n.ShortTag() {
	case "!!str":
		return fmt.Sprintf("the string %q", v)
	case "!!int":
		return "the integer " + lit(n.Value)
	case "!!float":
		return "the number " + lit(n.Value)
	case "!!bool":
		return "the boolean " + lit(n.Value)
	case "!!null":
		return "empty"
	}
	return lit(n.ShortTag()) + " " + fmt.Sprintf("%q", v)
}

// lit shows a value from the spec in a message: as written when it is a
// short plain token, else quoted, so that no spec text can break the
// one-line message format.
func lit(s string) string {
	if len(s) > 0 && len(s) <= 40 && !strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) || unicode.IsSpace(r) || r == '"' }) {
		return s
	}
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return fmt.Sprintf("%q", s)
}

func quoteKey(k string) string {
	if len(k) > 40 {
		k = k[:40] + "..."
	}
	return fmt.Sprintf("%q", k)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// suggest proposes a known key close to a misspelt one.
func suggest(k string, allowed []string) string {
	best, bestD := "", 3
	for _, a := range allowed {
		if d := distance(strings.ToLower(k), a); d < bestD {
			best, bestD = a, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %s?)", best)
}

// distance is the Levenshtein distance between a and b (short keys only).
func distance(a, b string) int {
	if len(a) > 64 {
		return len(a)
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// scalar checks that n is a plain scalar of one of tags; allowed words
// what the key accepts.
func (d *decoder) scalar(n *yaml.Node, key, allowed string, tags ...string) *Error {
	if e := d.plain(n, key); e != nil {
		return e
	}
	if n.Kind == yaml.ScalarNode && contains(tags, n.ShortTag()) {
		return nil
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return d.errf(n, "%s has no value; allowed: %s", key, allowed)
	}
	return d.errf(n, "%s is %s; allowed: %s", key, describe(n), allowed)
}

func (d *decoder) boolean(n *yaml.Node, key string) (bool, *Error) {
	if e := d.scalar(n, key, "true or false", "!!bool"); e != nil {
		return false, e
	}
	var b bool
	if err := n.Decode(&b); err != nil {
		return false, d.errf(n, "%s is %s; allowed: true or false", key, describe(n))
	}
	return b, nil
}

func (d *decoder) str(n *yaml.Node, key, allowed string) (string, *Error) {
	if e := d.scalar(n, key, allowed, "!!str"); e != nil {
		return "", e
	}
	return n.Value, nil
}

// numeral rejects what a YAML 1.1 reader and a YAML 1.2 reader would
// read as different numbers, or as no number: an explicit tag, a leading
// zero (010 is eight in YAML 1.1, ten in YAML 1.2), a digit separator _,
// and a number too large for float64, which the YAML library reads as a
// string. Specs are YAML 1.2.
func (d *decoder) numeral(n *yaml.Node, key, allowed string) *Error {
	if n.Kind != yaml.ScalarNode {
		return nil
	}
	if t := n.ShortTag(); n.Style&yaml.TaggedStyle != 0 && (t == "!!int" || t == "!!float") {
		return d.errf(n, "%s %s has the tag %s; tags are not supported in specs: write the number without one, e.g. 64; allowed: %s", key, lit(n.Value), n.ShortTag(), allowed)
	}
	if n.Style != 0 {
		return nil // quoted: the type check says it is a string
	}
	switch v := n.Value; {
	case leadingZeroRE.MatchString(v):
		return d.errf(n, "%s %s has a leading zero (YAML 1.1 reads it as octal, YAML 1.2 as decimal); allowed: %s, written without leading zeros", key, lit(v), allowed)
	case numberRE.MatchString(v) && strings.Contains(v, "_"):
		return d.errf(n, "%s %s holds _, which YAML 1.2 does not allow in numbers; allowed: %s, written without _", key, lit(v), allowed)
	case numberRE.MatchString(v) && n.ShortTag() == "!!str":
		return d.errf(n, "%s %s overflows: it is beyond the range of a float64; allowed: %s", key, lit(v), allowed)
	}
	return nil
}

func (d *decoder) number(n *yaml.Node, key, allowed string) (float64, *Error) {
	if e := d.numeral(n, key, allowed); e != nil {
		return 0, e
	}
	if e := d.scalar(n, key, allowed, "!!int", "!!float"); e != nil {
		return 0, e
	}
	var v float64
	if err := n.Decode(&v); err != nil {
		return 0, d.errf(n, "%s %s is not a number; allowed: %s", key, lit(n.Value), allowed)
	}
	return v, nil
}

// integer reads an integer in [lo, hi].
func (d *decoder) integer(n *yaml.Node, key string, lo, hi int) (int, *Error) {
	allowed := fmt.Sprintf("an integer from %d to %d", lo, hi)
	if lo == hi {
		allowed = fmt.Sprintf("the integer %d", lo)
	}
	if e := d.numeral(n, key, allowed); e != nil {
		return 0, e
	}
	if e := d.scalar(n, key, allowed, "!!int", "!!float"); e != nil {
		return 0, e
	}
	var v int64
	if n.ShortTag() == "!!float" || n.Decode(&v) != nil {
		if integerRE.MatchString(n.Value) {
			return 0, d.errf(n, "%s %s is out of range; allowed: %s", key, lit(n.Value), allowed)
		}
		return 0, d.errf(n, "%s %s is not an integer; allowed: %s", key, lit(n.Value), allowed)
	}
	if v < int64(lo) || v > int64(hi) {
		if lo == hi {
			return 0, d.errf(n, "%s %s is not supported; allowed: %s", key, lit(n.Value), allowed)
		}
		return 0, d.errf(n, "%s %s is out of range; allowed: %s", key, lit(n.Value), allowed)
	}
	return int(v), nil
}

// list checks that n is a non-empty list of at most limit items.
func (d *decoder) list(n *yaml.Node, key, allowed string, limit int) *Error {
	if e := d.plain(n, key); e != nil {
		return e
	}
	if n.Kind != yaml.SequenceNode {
		if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
			return d.errf(n, "%s has no value; allowed: %s", key, allowed)
		}
		return d.errf(n, "%s is %s; allowed: %s", key, describe(n), allowed)
	}
	if len(n.Content) == 0 {
		return d.errf(n, "%s is empty; allowed: %s", key, allowed)
	}
	if len(n.Content) > limit {
		return d.errf(n.Content[limit], "%s has more than %d entries; allowed: at most %d", key, limit, limit)
	}
	return nil
}

// file decodes the top-level mapping.
func (d *decoder) file(root *yaml.Node) (*File, *Error) {
	if root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null" && root.Value != "null" && root.Value != "~" {
		// A document of only "---" and comments.
		return nil, &Error{Path: d.path, Line: 1, Col: 1, Msg: "empty spec; a spec is a YAML mapping that starts with version: 1"}
	}
	fs, errs := d.mappingAll(root, "the spec", "version: 1", fileKeys)
	if fs == nil {
		return nil, errs[0]
	}
	for _, e := range errs {
		d.add(e)
	}
	var e *Error
	f := &File{}
	// The version comes first: a spec of another version may use keys and
	// values this one does not know, and should be told so.
	v, ok := fs.vals["version"]
	if !ok {
		if len(d.errs) > 0 {
			return nil, nil // a misspelt or repeated key says more
		}
		return nil, d.errf(root, "the spec has no version; allowed: version: %d, as the first key", Version)
	}
	if f.Version, e = d.integer(v, "version", Version, Version); e != nil {
		return nil, e
	}
	v, ok = fs.vals["package"]
	if !ok {
		if len(d.errs) > 0 {
			return nil, nil // a misspelt or repeated key says more
		}
		return nil, d.errf(root, "the spec has no package; allowed: package: NAME, the Go package name of the generated code, e.g. rmsnorm")
	}
	if f.Package, e = d.packageName(v); e != nil {
		d.add(e) // the kernels do not depend on it
	}
	v, ok = fs.vals["kernels"]
	if !ok {
		if len(d.errs) > 0 {
			return nil, nil // a misspelt or repeated key or a bad package says more
		}
		return nil, d.errf(root, "the spec has no kernels; allowed: kernels: a list of kernels, each with name, mean and hidden")
	}
	if e := d.list(v, "kernels", "a list of kernels, each a mapping with name, mean and hidden", MaxKernels); e != nil {
		return nil, e
	}
	d.names = map[string]*yaml.Node{}
	entries := map[string]entry{}
	for i, kn := range v.Content {
		// Each kernel is checked whatever the others hold; the generated
		// names only between kernels without other problems.
		k := d.kernel(kn, i+1)
		if k == nil {
			continue
		}
		if e := d.entries(entries, k); e != nil {
			d.add(e)
			continue
		}
		f.Kernels = append(f.Kernels, k.Kernel)
	}
	return f, nil
}

// packageName checks the Go package name: it is written into every file
// after "package " and names the output directory, so only a plain
// identifier may pass (no paths, no code).
func (d *decoder) packageName(n *yaml.Node) (string, *Error) {
	s, e := d.str(n, "package", packageAllowed)
	if e != nil {
		return "", e
	}
	if msg := CheckPackageName(s); msg != "" {
		return "", d.errf(n, "%s", msg)
	}
	return s, nil
}

// CheckPackageName returns what is wrong with a Go package name, or "" if
// it is fine. The CLI uses it for $GOPACKAGE and -package too.
func CheckPackageName(s string) string {
	const allowed = packageAllowed
	switch {
	case s == "":
		return "package is empty; allowed: " + allowed
	case len(s) > MaxNameLen:
		return fmt.Sprintf("package %q is longer than %d characters; allowed: %s", s[:MaxNameLen]+"...", MaxNameLen, allowed)
	case s == "_":
		return "package \"_\" is the blank identifier; allowed: " + allowed
	case !packageRE.MatchString(s):
		return fmt.Sprintf("package %q is not a Go identifier; allowed: %s", s, allowed)
	case token.IsKeyword(s):
		return fmt.Sprintf("package %q is a Go keyword; allowed: %s", s, allowed)
	case s == "main":
		return "package \"main\" is a command, which no other package can import; allowed: " + allowed
	case s == "init":
		return "package \"init\" cannot be imported (init is reserved for init functions); allowed: " + allowed
	case s == "documentation":
		return "package \"documentation\" is ignored by the go command (its files hold documentation only); allowed: " + allowed
	case strings.HasSuffix(s, "_test"):
		return fmt.Sprintf("package %q ends in _test, which names an external test package, not one to generate code into; allowed: %s", s, allowed)
	}
	if i := strings.LastIndexByte(s, '_'); i >= 0 {
		switch suffix := s[i+1:]; {
		case contains(knownOS, suffix):
			return fmt.Sprintf("package %q ends in _%s, a GOOS: a file named after it builds only on %s; allowed: %s", s, suffix, suffix, allowed)
		case contains(knownArch, suffix):
			return fmt.Sprintf("package %q ends in _%s, a GOARCH: a file named after it builds only on %s; allowed: %s", s, suffix, suffix, allowed)
		}
	}
	return ""
}

// knownOS and knownArch are the go command's GOOS and GOARCH values
// (go/build's lists, which it does not export), which a file name suffix
// _GOOS or _GOARCH restricts the file to.
var (
	knownOS = []string{"aix", "android", "darwin", "dragonfly", "freebsd", "hurd", "illumos", "ios", "js",
		"linux", "nacl", "netbsd", "openbsd", "plan9", "solaris", "wasip1", "windows", "zos"}
	knownArch = []string{"386", "amd64", "amd64p32", "arm", "armbe", "arm64", "arm64be", "loong64", "mips",
		"mipsle", "mips64", "mips64le", "mips64p32", "mips64p32le", "ppc", "ppc64", "ppc64le", "riscv",
		"riscv64", "s390", "s390x", "sparc", "sparc64", "wasm"}
)

// kernel is a decoded kernel with the nodes later checks point at.
type kernel struct {
	Kernel
	nameNode    *yaml.Node
	hiddenNodes []*yaml.Node
}

// kernel decodes the i-th (1-based) kernel, or records its problems and
// returns nil.
func (d *decoder) kernel(n *yaml.Node, i int) *kernel {
	before := len(d.errs)
	fs, errs := d.mappingAll(n, "kernel", "{name: RMSNorm, mean: false, hidden: [4096]}", kernelKeys)
	for _, e := range errs {
		d.add(e)
	}
	if fs == nil {
		return nil
	}
	var e *Error
	k := &kernel{Kernel: Kernel{
		Axis:    DefaultAxis,
		Epsilon: DefaultEpsilon,
		Scale:   true,
		Pos:     pos(n),
	}}
	// Each key's value is checked on its own; the checks of absent keys
	// and of keys that depend on each other come after, and only when
	// every value read (they would repeat or guess at a value's problem).
	for j := 0; j < len(n.Content); j += 2 {
		if !fs.first(j) {
			continue
		}
		key, v := n.Content[j].Value, n.Content[j+1]
		switch key {
		case "name":
			k.Name, e = d.kernelName(v)
			k.nameNode = v
			if first, ok := d.names[k.Name]; ok && e == nil {
				e = d.errf(v, "kernel name %s is used twice (first at %d:%d); give each kernel its own name", k.Name, first.Line, first.Column)
			}
			d.names[k.Name] = v
		case "doc":
			k.Doc, e = d.doc(v)
		case "axis":
			k.Axis, e = d.str(v, "axis", axesAllowed)
			if e == nil && !contains(Axes, k.Axis) {
				e = d.errf(v, "axis %s is not supported%s; allowed: %s", lit(k.Axis), suggest(k.Axis, Axes), axesAllowed)
			}
		case "storage":
			k.Storage, e = d.str(v, "storage", storagesAllowed)
			if e == nil && !contains(Storages, k.Storage) {
				e = d.errf(v, "storage %s is not supported%s; allowed: %s", lit(k.Storage), suggest(k.Storage, Storages), storagesAllowed)
			}
		case "groups":
			k.Groups, e = d.integer(v, "groups", 1, MaxHidden)
		case "group_size":
			k.GroupSize, e = d.integer(v, "group_size", 1, MaxHidden)
		case "running":
			k.Running, e = d.running(v)
		case "mean":
			k.Mean, e = d.boolean(v, "mean")
		case "statistic":
			k.Statistic, e = d.statistic(v)
		case "epsilon":
			if v.Kind == yaml.ScalarNode && v.ShortTag() == "!!str" && v.Value == RuntimeEpsilon {
				k.RuntimeEpsilon, k.Epsilon = true, 0
				break
			}
			k.Epsilon, e = d.epsilon(v)
		case "scale":
			k.Scale, e = d.boolean(v, "scale")
		case "scale_offset":
			k.ScaleOffset, e = d.finite32(v, "scale_offset", "a finite number, e.g. 1 for Gemma's (1 + gamma)", false)
		case "shift":
			k.Shift, e = d.boolean(v, "shift")
		case "affine_per":
			k.AffinePerRow, e = d.affinePer(v)
		case "residual":
			k.Residual, e = d.residual(v)
		case "save_stats":
			k.SaveStats, e = d.boolean(v, "save_stats")
		case "backward":
			k.Backward, e = d.boolean(v, "backward")
		case "hidden":
			k.Hidden, k.hiddenNodes, e = d.hidden(v)
		case "targets":
			k.Targets, e = d.targets(v)
		}
		if e != nil {
			d.add(e)
		}
	}
	if len(d.errs) > before {
		return nil
	}
	if k.nameNode == nil {
		d.add(d.errf(n, "kernel %d has no name; allowed: name: an exported Go identifier, e.g. RMSNorm", i))
		return nil
	}
	if _, ok := fs.vals["mean"]; !ok {
		d.add(d.errf(n, "kernel %s has no mean; allowed: mean: true (LayerNorm: subtract the mean) or mean: false (RMSNorm)", k.Name))
		return nil
	}
	if k.hiddenNodes == nil && (k.Axis == "last" || k.Axis == "channels") {
		d.add(d.errf(n, "kernel %s has no hidden; allowed: hidden: a list of row lengths to specialise, e.g. [4096]", k.Name))
		return nil
	}
	if v, ok := fs.vals["scale_offset"]; ok && !k.Scale && k.ScaleOffset != 0 {
		d.add(d.errf(v, "scale_offset %s without a scale (scale: false); allowed: scale_offset only with scale: true, where it gives (scale_offset + gamma)", lit(v.Value)))
		return nil
	}
	if e := d.combinations(k, fs); e != nil {
		d.add(e)
		return nil
	}
	if e := d.axisFields(k, fs); e != nil {
		d.add(e)
		return nil
	}
	if e := d.backward(k, fs); e != nil {
		d.add(e)
		return nil
	}
	if k.Targets == nil {
		k.Targets = append([]string(nil), Targets...)
	}
	return k
}

// combinations checks the fields that depend on each other (statistic,
// mean, epsilon, save_stats, scale, shift, affine_per) and fills in the
// default statistic. Of several problems, the first in the file is reported.
func (d *decoder) combinations(k *kernel, fs *fields) *Error {
	stat, explicit := fs.vals["statistic"]
	if !explicit {
		k.Statistic = DefaultStatistic(k.Mean)
	}
	var errs []*Error
	switch {
	case k.Statistic == "variance" && !k.Mean:
		errs = append(errs, d.errf(stat, "statistic variance with mean: false (at %s); allowed: variance only with mean: true (it is taken about the mean), rms, l2 or none with mean: false", at(fs.vals["mean"])))
	case k.Statistic != "variance" && k.Mean:
		errs = append(errs, d.errf(stat, "statistic %s with mean: true (at %s); allowed: variance with mean: true (LayerNorm), %s only with mean: false", k.Statistic, at(fs.vals["mean"]), k.Statistic))
	}
	if k.Statistic == "none" {
		if v, ok := fs.vals["epsilon"]; ok {
			errs = append(errs, d.errf(v, "epsilon with statistic none (at %s), which takes no square root to add it to; allowed: no epsilon with statistic none (fold it into gain and bias, as BatchNorm's running variance is)", at(stat)))
		}
		if v, ok := fs.vals["save_stats"]; ok && k.SaveStats {
			errs = append(errs, d.errf(v, "save_stats: true with statistic none (at %s), which computes no statistics; allowed: save_stats: false, or a statistic variance, rms or l2", at(stat)))
		}
		if !k.Scale && !k.Shift {
			errs = append(errs, d.errf(stat, "statistic none with neither scale nor shift leaves the kernel nothing to do; allowed: statistic none with scale: true or shift: true (y = x*gain + bias)"))
		}
		k.Epsilon, k.RuntimeEpsilon = 0, false // not used: no square root
	}
	if v, ok := fs.vals["affine_per"]; ok && k.AffinePerRow && !k.Scale && !k.Shift {
		errs = append(errs, d.errf(v, "affine_per: row with neither scale nor shift; allowed: affine_per: row with scale: true (gain) or shift: true (bias), or leave affine_per out"))
	}
	var first *Error
	for _, e := range errs {
		if first == nil || e.Line < first.Line || e.Line == first.Line && e.Col < first.Col {
			first = e
		}
	}
	return first
}

// backward checks backward: true against the forward's save_stats, and
// makes the forward save the statistics the backward reads.
func (d *decoder) backward(k *kernel, fs *fields) *Error {
	v, ok := fs.vals["backward"]
	if !ok || !k.Backward {
		return nil
	}
	if s, ok := fs.vals["save_stats"]; ok && !k.SaveStats && k.Statistic != "none" {
		return d.errf(s, "save_stats: false with backward: true (at %s), whose backward pass reads the saved statistics; allowed: leave save_stats out (backward implies it) or save_stats: true", at(v))
	}
	k.SaveStats = k.Statistic != "none"
	return nil
}

// axisFields checks the fields that depend on the axis: groups, running,
// affine_per, residual and hidden; axis batch's affine is per channel.
func (d *decoder) axisFields(k *kernel, fs *fields) *Error {
	axisNode := fs.vals["axis"]
	where := func() string {
		if axisNode == nil {
			return "axis last, the default"
		}
		return fmt.Sprintf("axis %s at %s", k.Axis, at(axisNode))
	}
	for _, key := range []string{"groups", "group_size"} {
		if v, ok := fs.vals[key]; ok && k.Axis != "groups" {
			return d.errf(v, "%s with %s; allowed: %s only with axis: groups (GroupNorm, InstanceNorm)", key, where(), key)
		}
	}
	if v, ok := fs.vals["running"]; ok && k.Axis != "batch" {
		return d.errf(v, "running statistics with %s; allowed: running only with axis: batch (BatchNorm in training)", where())
	}
	if k.Axis == "last" {
		return nil
	}
	if v, ok := fs.vals["residual"]; ok {
		return d.errf(v, "residual with %s; allowed: residual only with axis: last", where())
	}
	if k.Statistic == "none" && k.Axis != "batch" {
		return d.errf(fs.vals["statistic"], "statistic none with %s, which normalizes; allowed: statistic none only with axis: batch (BatchNorm at inference, statistics folded into gain and bias per channel) or axis: last", where())
	}
	if k.Statistic == "l2" {
		return d.errf(fs.vals["statistic"], "statistic l2 with %s; allowed: variance or rms (l2 is WeightNorm's, over rows: axis last)", where())
	}
	if v, ok := fs.vals["affine_per"]; ok {
		return d.errf(v, "affine_per with %s, whose affine is always per channel; allowed: leave affine_per out", where())
	}
	switch k.Axis {
	case "channels":
		return nil
	case "groups":
		g, gs := fs.vals["groups"], fs.vals["group_size"]
		switch {
		case g == nil && gs == nil:
			return d.errf(axisNode, "axis groups without groups or group_size; allowed: groups: the number of channel groups (GroupNorm, e.g. 32), or group_size: the channels per group (1: InstanceNorm)")
		case g != nil && gs != nil:
			return d.errf(gs, "group_size with groups (at %s); allowed: one of them: groups (the number of groups) or group_size (the channels per group)", at(g))
		}
	case "batch":
		if v, ok := fs.vals["running"]; ok && k.Statistic == "none" {
			return d.errf(v, "running statistics with statistic none, which computes no batch statistics; allowed: running with mean: true (BatchNorm in training)")
		}
		if !k.Mean && k.Statistic != "none" {
			return d.errf(fs.vals["mean"], "axis batch with mean: false; allowed: mean: true (BatchNorm in training subtracts each channel's batch mean), or statistic: none (BatchNorm at inference)")
		}
		k.AffinePerRow = true // one row per channel
	}
	if v, ok := fs.vals["hidden"]; ok {
		return d.errf(v, "hidden with %s, whose sizes are all given at run time (channels, spatial); allowed: leave hidden out", where())
	}
	return nil
}

// running reads how BatchNorm's running statistics are updated.
func (d *decoder) running(n *yaml.Node) (*Running, *Error) {
	const conventions = "pytorch (running = (1-momentum)*running + momentum*batch, unbiased variance) or onnx (running = momentum*running + (1-momentum)*batch, biased variance)"
	fs, e := d.mapping(n, "running", "{convention: pytorch, momentum: 0.1}", runningKeys)
	if e != nil {
		return nil, e
	}
	r := &Running{}
	for j := 0; j < len(n.Content); j += 2 {
		switch v := n.Content[j+1]; n.Content[j].Value {
		case "momentum":
			r.Momentum, e = d.finite32(v, "momentum", "a number from 0 to 1, e.g. 0.1 (PyTorch) or 0.9 (ONNX)", false)
			if m, _ := round32(r.Momentum); e == nil && !(m >= 0 && m <= 1) {
				e = d.errf(v, "momentum %s is out of range; allowed: a number from 0 to 1, e.g. 0.1 (PyTorch) or 0.9 (ONNX)", lit(v.Value))
			}
		case "convention":
			r.Convention, e = d.str(v, "convention", conventions)
			if e == nil && !contains(Conventions, r.Convention) {
				e = d.errf(v, "convention %s is not supported%s; allowed: %s", lit(r.Convention), suggest(r.Convention, Conventions), conventions)
			}
		}
		if e != nil {
			return nil, e
		}
	}
	if _, ok := fs.vals["convention"]; !ok {
		return nil, d.errf(n, "running has no convention; allowed: %s", conventions)
	}
	if _, ok := fs.vals["momentum"]; !ok {
		return nil, d.errf(n, "running has no momentum; allowed: a number from 0 to 1, e.g. 0.1 (PyTorch) or 0.9 (ONNX)")
	}
	return r, nil
}

// at words a node's position for a message, "LINE:COL".
func at(n *yaml.Node) string { return fmt.Sprintf("%d:%d", n.Line, n.Column) }

// statistic reads what the row is divided by.
func (d *decoder) statistic(n *yaml.Node) (string, *Error) {
	const allowed = "variance (LayerNorm, with mean: true), rms (RMSNorm), l2 (WeightNorm's ||v||) or none (no normalization: the affine alone)"
	s, e := d.str(n, "statistic", allowed)
	if e != nil {
		return "", e
	}
	if !contains(Statistics, s) {
		return "", d.errf(n, "unknown statistic %s%s; allowed: %s", lit(s), suggest(s, Statistics), allowed)
	}
	return s, nil
}

// affinePer reads whether scale and shift hold one value per element of
// the row or one per row.
func (d *decoder) affinePer(n *yaml.Node) (bool, *Error) {
	const allowed = "element (gamma and beta, one value per element of the row) or row (gain and bias, one value per row)"
	s, e := d.str(n, "affine_per", allowed)
	if e != nil {
		return false, e
	}
	switch s {
	case "element":
		return false, nil
	case "row":
		return true, nil
	}
	return false, d.errf(n, "affine_per %s is not supported%s; allowed: %s", lit(s), suggest(s, AffinePer), allowed)
}

// kernelName checks a kernel name: it prefixes exported Go functions and
// assembly symbols, so it is an exported ASCII identifier.
func (d *decoder) kernelName(n *yaml.Node) (string, *Error) {
	const allowed = "an exported Go identifier: an upper-case letter A-Z followed by letters, digits or _, e.g. RMSNorm"
	s, e := d.str(n, "name", allowed)
	if e != nil {
		return "", e
	}
	switch {
	case s == "":
		return "", d.errf(n, "name is empty; allowed: %s", allowed)
	case len(s) > MaxNameLen:
		return "", d.errf(n, "name %q is longer than %d characters; allowed: %s", s[:MaxNameLen]+"...", MaxNameLen, allowed)
	case token.IsKeyword(s):
		return "", d.errf(n, "name %q is a Go keyword; allowed: %s", s, allowed)
	case packageRE.MatchString(s) && !kernelRE.MatchString(s):
		return "", d.errf(n, "name %q is not exported (it must start with A-Z); allowed: %s", s, allowed)
	case !kernelRE.MatchString(s):
		return "", d.errf(n, "name %q is not a Go identifier; allowed: %s", s, allowed)
	}
	return s, nil
}

// doc checks a kernel's documentation: it becomes a // comment in the
// generated code, so one line of printable text and nothing else.
func (d *decoder) doc(n *yaml.Node) (string, *Error) {
	const allowed = "one line of printable text"
	s, e := d.str(n, "doc", allowed)
	if e != nil {
		return "", e
	}
	s = strings.TrimSpace(s)
	if len(s) > MaxDocLen {
		return "", d.errf(n, "doc is longer than %d bytes; allowed: %s, at most %d bytes", MaxDocLen, allowed, MaxDocLen)
	}
	for _, r := range s {
		if r == '\n' || r == '\r' {
			return "", d.errf(n, "doc holds a line break; allowed: %s (it becomes a comment in the generated code)", allowed)
		}
		if !unicode.IsPrint(r) && r != '\t' {
			return "", d.errf(n, "doc holds the unprintable character %U; allowed: %s", r, allowed)
		}
	}
	return s, nil
}

// epsilon reads the epsilon added inside the square root.
func (d *decoder) epsilon(n *yaml.Node) (float64, *Error) {
	const allowed = "a number with 0 <= epsilon < 1, typically 1e-5 or 1e-6"
	v, e := d.number(n, "epsilon", allowed)
	if e != nil {
		return 0, e
	}
	// The kernels use float32(epsilon): the limits hold after rounding.
	r, inf := round32(v)
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return 0, d.errf(n, "epsilon %s is not a finite number; allowed: %s", lit(n.Value), allowed)
	case v < 0:
		return 0, d.errf(n, "epsilon %s is negative; allowed: %s", lit(n.Value), allowed)
	case v >= 1:
		return 0, d.errf(n, "epsilon %s is absurdly large (it would dominate the variance); allowed: %s", lit(n.Value), allowed)
	case inf || r >= 1:
		return 0, d.errf(n, "epsilon %s rounds to 1 in float32, as the kernels use it; allowed: %s (at most 0.99999994)", lit(n.Value), allowed)
	case v > 0 && r < minNormal32:
		// The kernels add float32(epsilon): a smaller value silently becomes 0.
		return 0, d.errf(n, "epsilon %s is too small for float32 (it would round to 0 or lose precision); allowed: 0, or from 1.1754944e-38 up to 1", lit(n.Value))
	}
	return v, nil
}

// finite32 reads a number the kernels use as a float32 constant.
func (d *decoder) finite32(n *yaml.Node, key, allowed string, nonZero bool) (float64, *Error) {
	v, e := d.number(n, key, allowed)
	if e != nil {
		return 0, e
	}
	// The kernels use float32(v): the limits hold after rounding, so
	// 3.4028235e38, which rounds to the largest float32, is allowed.
	r, inf := round32(v)
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return 0, d.errf(n, "%s %s is not a finite number; allowed: %s", key, lit(n.Value), allowed)
	case inf:
		return 0, d.errf(n, "%s %s overflows float32; allowed: %s", key, lit(n.Value), allowed)
	case nonZero && v == 0:
		return 0, d.errf(n, "%s is 0; allowed: %s", key, allowed)
	case v != 0 && math.Abs(r) < minNormal32:
		return 0, d.errf(n, "%s %s is too small for float32 (it would round to 0 or lose precision); allowed: %s", key, lit(n.Value), allowed)
	}
	return v, nil
}

// round32 is v rounded to float32 (as float64), and whether it rounds to
// an infinity: float32's largest value plus half its last unit rounds up.
func round32(v float64) (float64, bool) {
	const limit = math.MaxFloat32 + 0x1p103
	if math.Abs(v) >= limit {
		return math.Copysign(math.Inf(1), v), true
	}
	return float64(float32(v)), false
}

// residual reads the fused residual input's options.
func (d *decoder) residual(n *yaml.Node) (*Residual, *Error) {
	_, e := d.mapping(n, "residual", "{alpha: 1, store_sum: true}", residualKeys)
	if e != nil {
		return nil, e
	}
	r := &Residual{Alpha: 1}
	var alphaKey *yaml.Node // the first of alpha and deepnorm
	for j := 0; j < len(n.Content); j += 2 {
		switch k, v := n.Content[j], n.Content[j+1]; k.Value {
		case "alpha", "deepnorm":
			if alphaKey != nil {
				return nil, d.errf(k, "residual has both alpha (at %s) and deepnorm; allowed: one of them: alpha, or deepnorm to derive alpha from the layer counts", at(alphaKey))
			}
			alphaKey = k
			if k.Value == "alpha" {
				r.Alpha, e = d.finite32(v, "alpha", "a finite non-zero number, e.g. 1 (Pre-LN, Post-LN) or DeepNorm's (2N)^(1/4)", true)
			} else {
				r.DeepNorm, r.Alpha, e = d.deepNorm(v)
			}
		case "store_sum":
			r.StoreSum, e = d.boolean(v, "store_sum")
		}
		if e != nil {
			return nil, e
		}
	}
	return r, nil
}

// deepNorm reads DeepNorm's layer counts and derives alpha from them
// (Wang et al. 2022, "DeepNet", table 1).
func (d *decoder) deepNorm(n *yaml.Node) (*DeepNorm, float64, *Error) {
	const sides = "encoder or decoder, the stack of an encoder-decoder model the kernel normalizes"
	_, e := d.mapping(n, "deepnorm", "{encoder_layers: 18}", deepnormKeys)
	if e != nil {
		return nil, 0, e
	}
	dn := &DeepNorm{}
	var sideNode *yaml.Node
	for j := 0; j < len(n.Content); j += 2 {
		switch v := n.Content[j+1]; n.Content[j].Value {
		case "encoder_layers":
			dn.EncoderLayers, e = d.integer(v, "encoder_layers", 1, MaxLayers)
		case "decoder_layers":
			dn.DecoderLayers, e = d.integer(v, "decoder_layers", 1, MaxLayers)
		case "side":
			sideNode = v
			dn.Side, e = d.str(v, "side", sides)
			if e == nil && !contains(Sides, dn.Side) {
				e = d.errf(v, "side %s is not supported%s; allowed: %s", lit(dn.Side), suggest(dn.Side, Sides), sides)
			}
		}
		if e != nil {
			return nil, 0, e
		}
	}
	enc, dec := float64(dn.EncoderLayers), float64(dn.DecoderLayers)
	switch {
	case enc == 0 && dec == 0:
		return nil, 0, d.errf(n, "deepnorm has neither encoder_layers nor decoder_layers; allowed: encoder_layers: N (encoder-only), decoder_layers: M (decoder-only), or both with side: encoder or side: decoder")
	case enc > 0 && dec > 0:
		switch dn.Side {
		case "encoder":
			return dn, 0.81 * math.Pow(math.Pow(enc, 4)*dec, 1.0/16), nil
		case "decoder":
			return dn, math.Pow(3*dec, 0.25), nil
		}
		return nil, 0, d.errf(n, "deepnorm of an encoder-decoder model (encoder_layers and decoder_layers) has no side; allowed: side: %s (their alphas differ)", sides)
	}
	only, count := "encoder", enc
	if dec > 0 {
		only, count = "decoder", dec
	}
	if sideNode != nil && dn.Side != only {
		return nil, 0, d.errf(sideNode, "side %s, but deepnorm has only %s_layers; allowed: side: %s or no side when only %s_layers is given, or both layer counts for an encoder-decoder model", dn.Side, only, only, only)
	}
	dn.Side = only
	return dn, math.Pow(2*count, 0.25), nil
}

// hidden reads the list of row lengths.
func (d *decoder) hidden(n *yaml.Node) ([]int, []*yaml.Node, *Error) {
	allowed := fmt.Sprintf("a list of distinct row lengths from 1 to %d, e.g. [4096]", MaxHidden)
	if e := d.list(n, "hidden", allowed, MaxSizes); e != nil {
		return nil, nil, e
	}
	var hs []int
	seen := map[int]*yaml.Node{}
	for _, v := range n.Content {
		h, e := d.integer(v, "hidden size", 1, MaxHidden)
		if e != nil {
			return nil, nil, e
		}
		if first, ok := seen[h]; ok {
			return nil, nil, d.errf(v, "hidden size %d is listed twice (first at %d:%d); allowed: %s", h, first.Line, first.Column, allowed)
		}
		seen[h] = v
		hs = append(hs, h)
	}
	return hs, n.Content, nil
}

// targets reads the instruction sets; the result is in Targets order and
// always holds purego, the fallback every package needs.
func (d *decoder) targets(n *yaml.Node) ([]string, *Error) {
	allowed := "a list of distinct instruction sets from " + allowedTarget + " (leave targets out for all)"
	// The list's length is left to the duplicate check, which says more.
	if e := d.list(n, "targets", allowed, math.MaxInt); e != nil {
		return nil, e
	}
	seen := map[string]*yaml.Node{}
	for _, v := range n.Content {
		t, e := d.str(v, "target", allowed)
		if e != nil {
			return nil, e
		}
		if !contains(Targets, t) {
			return nil, d.errf(v, "unknown target %q%s; allowed: %s", t, suggest(t, Targets), allowedTarget)
		}
		if first, ok := seen[t]; ok {
			return nil, d.errf(v, "target %s is listed twice (first at %d:%d); allowed: %s", t, first.Line, first.Column, allowed)
		}
		seen[t] = v
	}
	var ts []string
	for _, t := range Targets {
		if seen[t] != nil || t == "purego" {
			ts = append(ts, t)
		}
	}
	return ts, nil
}

// entry is a generated name and the kernel whose spec produces it.
type entry struct {
	kernel string
	at     *yaml.Node
}

// wrapperForms are the prefixes of the unexported per-kernel Go functions
// of the generated code (argument checks, dispatch, the driver of the
// assembly), named after the entry point; the assembly of each ISA is
// named by target.Prefixes, with "Any" for the run-time size and NT for
// the streaming-store variant.
var wrapperForms = []string{"check", "impl", "run"}

// genName is a generated name and the spec node it comes from.
type genName struct {
	name string
	at   *yaml.Node
}

// generatedNames is GeneratedNames with the node each name comes from
// (the kernel's name, or the hidden size).
func (k *kernel) generatedNames() []genName {
	var out []genName
	k.Kernel.names(func(name string, size int) {
		at := k.nameNode
		if size >= 0 {
			at = k.hiddenNodes[size]
		}
		out = append(out, genName{name, at})
	})
	return out
}

// GeneratedNames lists the package-level names the generated code gives
// kernel k: the entry points (Name+H, Name+"Any") with their Parallel
// forms, the Fuzz, Benchmark and Example functions of the tests, and the
// unexported per-kernel helpers before the spec's prefix is added. No two
// kernels of a valid spec share one.
func (k Kernel) GeneratedNames() []string {
	var out []string
	k.names(func(name string, _ int) { out = append(out, name) })
	return out
}

// names calls emit with each generated name of k and the index in Hidden
// of the size it comes from (-1: from the name alone).
func (k Kernel) names(emit func(name string, size int)) {
	rows := k.Axis == "last" || k.Axis == ""
	sized := rows || k.Axis == "channels"
	forms := []string{k.Name}
	if k.Axis == "batch" {
		forms = append(forms, k.Name+"Columns")
	}
	for fi, base := range forms {
		for i := -1; i < len(k.Hidden); i++ {
			size := "Any"
			if i >= 0 {
				size = fmt.Sprint(k.Hidden[i])
			}
			e := base + size
			if i < 0 && !sized {
				e = base // no fixed size: the entry point has no suffix
			}
			if fi == 0 {
				emit(e, i)
				emit("Example"+e, i)
				emit(e+"Parallel", i)
				if i >= 0 {
					emit("Fuzz"+e, i)
					emit("Benchmark"+e, i)
				}
			}
			for _, h := range wrapperForms {
				emit(h+e, i)
			}
			for _, p := range target.Prefixes() {
				for _, v := range target.VariantSuffixes() {
					emit(p+base+size+v, i)
				}
			}
		}
		emit("go"+base+"Any", -1)
	}
	if !rows {
		emit("Fuzz"+k.Name, -1)
		emit("Benchmark"+k.Name, -1)
	}
}

// entries records every name the generated code gives k (see
// generatedNames) and rejects one another kernel already has: kernel Foo
// with H 12 and kernel Foo1 with H 2 would both define Foo12; kernel A
// with H 1 and the tensor kernel A1 would both define A1 (axis groups has no fixed size: no Any).
func (d *decoder) entries(seen map[string]entry, k *kernel) *Error {
	for _, g := range k.generatedNames() {
		if prev, ok := seen[g.name]; ok && prev.kernel != k.Name {
			return d.errf(g.at, "kernel %s's generated name %s is also a generated name of kernel %s (at %d:%d); allowed: kernel names and sizes whose generated names (Name+H, Name+\"Any\", Fuzz+Name, Name+\"Columns\", ...) are all distinct (rename a kernel)", k.Name, g.name, prev.kernel, prev.at.Line, prev.at.Column)
		}
		seen[g.name] = entry{k.Name, g.at}
	}
	return nil
}
