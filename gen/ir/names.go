package ir

import (
	"fmt"
	"go/token"
	"strings"
)

// Values may carry names (Scalar.Name, VecOp.Name): the pure-Go lowering
// declares its locals with them and every lowering's comments speak of
// them, so that generated code reads like the formula. A value without a
// name is sN (a scalar) or vN (a vector) there; an accumulator is named
// after the scalar of its first SSum, or accN.
//
// The rules, which Check enforces: a name is an ASCII Go identifier, not
// a keyword, not a predeclared identifier, not one of the names the
// lowerings give their own variables (reserved), not of the unnamed
// values' forms sN, vN, accN, and not ending in "Row" (the pure-Go
// lowering's row slices). Scalar names are unique within the kernel;
// vector names are unique within their loop and differ from every scalar
// name, since a loop's locals share the row's scope. A value may have the
// name of an array (the scalar stored into it, say): a lowering that
// declares both renames its array.

// reserved are the names of the lowerings' own variables: the row and
// element indexes, the shape arguments (target.ShapeArgs), the segment
// base and the math package.
var reserved = map[string]bool{
	"r": true, "i": true, "k": true, "base": true, "rows": true, "h": true,
	"stride": true, "segs": true, "seglen": true, "segstride": true, "rowstride": true,
	"math": true,
}

// predeclared are Go's predeclared identifiers: a local of one of these
// names would hide a type or builtin the generated code uses.
var predeclared = map[string]bool{}

func init() {
	for _, n := range strings.Fields(`any bool byte comparable complex64 complex128 error float32 float64
		int int8 int16 int32 int64 rune string uint uint8 uint16 uint32 uint64 uintptr
		true false iota nil
		append cap clear close complex copy delete imag len make max min new panic print println real recover`) {
		predeclared[n] = true
	}
}

// checkName reports why name cannot name a value, or "".
func checkName(name string) string {
	valid := name != "" && name != "_"
	for i, c := range name {
		letter := c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (i == 0 || c < '0' || c > '9') {
			valid = false
		}
	}
	switch {
	case !valid:
		return "is not an ASCII Go identifier"
	case token.IsKeyword(name):
		return "is a Go keyword"
	case predeclared[name]:
		return "is a predeclared Go identifier"
	case reserved[name]:
		return "is reserved for the lowerings' own variables"
	case unnamedForm(name):
		return "has the form of an unnamed value's name"
	case strings.HasSuffix(name, "Row"):
		return "ends in Row, the suffix of the pure-Go lowering's row slices"
	}
	return ""
}

// unnamedForm reports whether name is sN, vN or accN.
func unnamedForm(name string) bool {
	for _, p := range []string{"s", "v", "acc"} {
		if rest, ok := strings.CutPrefix(name, p); ok && rest != "" && strings.Trim(rest, "0123456789") == "" {
			return true
		}
	}
	return false
}

// checkNames verifies the naming rules above.
func checkNames(k *Kernel) error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("ir: kernel %s: %s", k.Name, fmt.Sprintf(format, args...))
	}
	scalars := map[string]bool{}
	for si, st := range k.Body {
		if st, ok := st.(*Scalar); ok && st.Name != "" {
			if st.Dst < 0 {
				return fail("statement %d (%s): name %q for no value", si, st.Code, st.Name)
			}
			if why := checkName(st.Name); why != "" {
				return fail("statement %d: scalar name %q %s", si, st.Name, why)
			}
			if scalars[st.Name] {
				return fail("statement %d: scalar name %q used twice", si, st.Name)
			}
			scalars[st.Name] = true
		}
	}
	for si, st := range k.Body {
		lp, ok := st.(*Loop)
		if !ok {
			continue
		}
		local := map[string]bool{}
		for oi, op := range lp.Ops {
			if op.Name == "" {
				continue
			}
			switch {
			case !op.Code.MakesValue():
				return fail("statement %d op %d (%s): name %q for no value", si, oi, op.Code, op.Name)
			case checkName(op.Name) != "":
				return fail("statement %d op %d: vector name %q %s", si, oi, op.Name, checkName(op.Name))
			case scalars[op.Name]:
				return fail("statement %d op %d: vector name %q is also a scalar's", si, oi, op.Name)
			case local[op.Name]:
				return fail("statement %d op %d: vector name %q used twice in the loop", si, oi, op.Name)
			}
			local[op.Name] = true
		}
	}
	return nil
}

// ScalarName is the name of scalar s: its Name, or sN.
func (k *Kernel) ScalarName(s S) string {
	if st := k.Def(s); st != nil && st.Name != "" {
		return st.Name
	}
	return fmt.Sprintf("s%d", s)
}

// Def is the statement that assigns scalar s, or nil.
func (k *Kernel) Def(s S) *Scalar {
	for _, st := range k.Body {
		if st, ok := st.(*Scalar); ok && st.Dst == s && st.Code != SStore && st.Code != SGuard {
			return st
		}
	}
	return nil
}

// AccName is the name of accumulator acc: the name of the scalar its
// first SSum assigns, or accN.
func (k *Kernel) AccName(acc int) string {
	for _, st := range k.Body {
		if st, ok := st.(*Scalar); ok && st.Code == SSum && st.Acc == acc {
			if st.Name != "" {
				return st.Name
			}
			break
		}
	}
	return fmt.Sprintf("acc%d", acc)
}

// Pass is the number of loop lp among the kernel's loops, from 1; 0 if
// lp is not one of them.
func (k *Kernel) Pass(lp *Loop) int {
	n := 0
	for _, st := range k.Body {
		if l, ok := st.(*Loop); ok {
			n++
			if l == lp {
				return n
			}
		}
	}
	return 0
}

// The texts below are the comments the lowerings write above their code,
// in one vocabulary: "pass 2 over the row: dev = x - shift; ...",
// "rstd = 1 / std".

// operand is how a scalar reads as an operand: an unnamed constant by
// its value, anything else by its name.
func (k *Kernel) operand(s S) string {
	if st := k.Def(s); st != nil && st.Code == SConst && st.Name == "" {
		return fmt.Sprintf("%g", st.Const)
	}
	return k.ScalarName(s)
}

// ScalarText is the text of statement st: "rstd = 1 / std". h is the
// fixed row length a lowering specialises 1/n for, or 0.
func (k *Kernel) ScalarText(st *Scalar, h int) string {
	arg := func(i int) string { return k.operand(st.Args[i]) }
	d := k.ScalarName(st.Dst)
	switch st.Code {
	case SConst:
		if st.Name == "" {
			return fmt.Sprintf("the constant %g", st.Const)
		}
		return fmt.Sprintf("%s = %g", d, st.Const)
	case SArg:
		return fmt.Sprintf("%s = the argument %s", d, k.Args[st.Arg].Name)
	case SInvLen:
		if h > 0 {
			return fmt.Sprintf("%s = 1/%d", d, h)
		}
		return d + " = 1/n, n the row's length"
	case SSum:
		return fmt.Sprintf("%s = sum(%s)", d, k.term(st))
	case SAdd, SSub, SMul, SDiv:
		op := map[ScalarCode]string{SAdd: "+", SSub: "-", SMul: "*", SDiv: "/"}[st.Code]
		return fmt.Sprintf("%s = %s %s %s", d, arg(0), op, arg(1))
	case SSqrt:
		return fmt.Sprintf("%s = sqrt(%s)", d, arg(0))
	case SLoad:
		a := k.Arrays[st.Array]
		if a.Role == RowIn {
			return fmt.Sprintf("%s = the row's first %s", d, a.Name)
		}
		return fmt.Sprintf("%s = %s[row]", d, a.Name)
	case SStore:
		return fmt.Sprintf("%s[row] = %s", k.Arrays[st.Array].Name, arg(0))
	case SGuard:
		return fmt.Sprintf("guard: the row goes to the caller unless %s", k.GuardCond(st))
	}
	return st.Code.String()
}

// BlockGuardText is the text of guard st in a lowering that runs a
// block of rows side by side and hands the whole block back.
func (k *Kernel) BlockGuardText(st *Scalar) string {
	return fmt.Sprintf("guard: the block goes to the caller unless %s in each of its rows", k.GuardCond(st))
}

// GuardCond is the condition of guard st: "1e-25 <= v <= 3.4028235e+38".
func (k *Kernel) GuardCond(st *Scalar) string {
	return fmt.Sprintf("%g <= %s <= %g", st.Lo, k.operand(st.Args[0]), st.Hi)
}

// term is what the loop before sum statement st adds into its
// accumulator per element, every vector value written out.
func (k *Kernel) term(st *Scalar) string {
	var found *Loop
	for _, s := range k.Body {
		if s == Stmt(st) {
			break
		}
		if lp, ok := s.(*Loop); ok {
			for _, op := range lp.Ops {
				if (op.Code == VAcc || op.Code == VAccMul) && op.Acc == st.Acc {
					found = lp
				}
			}
		}
	}
	if found == nil {
		return k.AccName(st.Acc)
	}
	p := k.newPrinter(found, false)
	for _, op := range found.Ops {
		if (op.Code == VAcc || op.Code == VAccMul) && op.Acc == st.Acc {
			return p.term(op)
		}
	}
	return k.AccName(st.Acc)
}

// LoopText is what loop lp does per element: values used more than once
// defined by name, stores and accumulations written with the rest inline.
func (k *Kernel) LoopText(lp *Loop) string {
	p := k.newPrinter(lp, true)
	var parts []string
	for i, op := range lp.Ops {
		switch op.Code {
		case VStore:
			parts = append(parts, fmt.Sprintf("%s = %s", k.Arrays[op.Array].Name, p.text(op.Args[0], 0)))
		case VAcc, VAccMul:
			parts = append(parts, fmt.Sprintf("%s += %s", k.AccName(op.Acc), p.term(op)))
		default:
			if p.defined[i] {
				parts = append(parts, fmt.Sprintf("%s = %s", p.name(V(i)), p.expr(V(i), 0)))
			}
		}
	}
	return strings.Join(parts, "; ")
}

// printer writes a loop's vector values as expressions.
type printer struct {
	k       *Kernel
	lp      *Loop
	defined []bool // written once under its name rather than inline
}

func (k *Kernel) newPrinter(lp *Loop, share bool) *printer {
	p := &printer{k: k, lp: lp, defined: make([]bool, len(lp.Ops))}
	if share {
		uses := make([]int, len(lp.Ops))
		for _, op := range lp.Ops {
			for _, a := range op.Args {
				uses[a]++
			}
		}
		for i, op := range lp.Ops {
			p.defined[i] = uses[i] > 1 && op.Code != VLoad && op.Code != VSplat
		}
	}
	return p
}

func (p *printer) name(v V) string {
	if n := p.lp.Ops[v].Name; n != "" {
		return n
	}
	return fmt.Sprintf("v%d", v)
}

// Precedences: an operand of lower precedence than its place needs
// parentheses.
const (
	precSum  = 1 // + and -
	precProd = 2 // *
	precAtom = 3
)

// text is v as an operand of an operator of precedence prec.
func (p *printer) text(v V, prec int) string {
	if p.defined[v] {
		return p.name(v)
	}
	return p.expr(v, prec)
}

// expr is v's defining expression, parenthesised for precedence prec.
// A right operand gets one more than its operator's, so that a - (b + c)
// keeps its parentheses while (a - b) - c reads a - b - c: the text says
// the order the operations are done in.
func (p *printer) expr(v V, prec int) string {
	op := p.lp.Ops[v]
	var s string
	own := precAtom
	switch op.Code {
	case VLoad:
		s = p.k.Arrays[op.Array].Name
	case VSplat:
		s = p.k.operand(op.Scalar)
	case VAdd:
		s, own = p.text(op.Args[0], precSum)+" + "+p.text(op.Args[1], precSum+1), precSum
	case VSub:
		s, own = p.text(op.Args[0], precSum)+" - "+p.text(op.Args[1], precSum+1), precSum
	case VMul:
		s, own = p.text(op.Args[0], precProd)+"*"+p.text(op.Args[1], precProd+1), precProd
	case VFMA:
		s = p.text(op.Args[0], precProd) + "*" + p.text(op.Args[1], precProd+1) + " + " + p.text(op.Args[2], precSum+1)
		own = precSum
	default:
		s = op.Code.String()
	}
	if own < prec {
		return "(" + s + ")"
	}
	return s
}

// term is what accumulation op adds.
func (p *printer) term(op VecOp) string {
	if op.Code == VAccMul {
		return p.text(op.Args[0], precProd) + "*" + p.text(op.Args[1], precProd+1)
	}
	return p.text(op.Args[0], 0)
}
