package pass

import "errors"

// ErrPressure marks an attempt at lowering that ran out of registers.
var ErrPressure = errors.New("out of registers")

// pressure is an error that counts as ErrPressure, its message unchanged.
type pressure struct{ err error }

func (p pressure) Error() string   { return p.err.Error() }
func (p pressure) Unwrap() []error { return []error{p.err, ErrPressure} }

// Pressure marks err, nil or not, as running out of registers.
func Pressure(err error) error {
	if err == nil {
		return nil
	}
	return pressure{err}
}

// Retry is the register-pressure policy every lowering shares: it lowers
// with cfg and, while the attempt runs out of registers (its error is
// ErrPressure), again with the configuration next derives from the last
// one and its result, which asks for less (fewer vectors unrolled, fewer
// rows per block, sums in the frame). Any other error ends it at once;
// when next has nothing left, the last attempt's result and error are
// returned.
func Retry[C, R any](cfg C, lower func(C) (R, error), next func(C, R) (C, bool)) (R, error) {
	for {
		r, err := lower(cfg)
		if err == nil || !errors.Is(err, ErrPressure) {
			return r, err
		}
		c, ok := next(cfg, r)
		if !ok {
			return r, err
		}
		cfg = c
	}
}
