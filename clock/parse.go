package clock

import (
	"fmt"
	"math/big"
	"strings"
)

// units are the suffixes Parse accepts; "s" comes last so that "ms" is not
// read as a number of seconds.
var units = []struct {
	suffix string
	t      Time
}{
	{"fs", Femtosecond}, {"ps", Picosecond}, {"ns", Nanosecond},
	{"us", Microsecond}, {"µs", Microsecond}, {"μs", Microsecond},
	{"ms", Millisecond}, {"s", Second},
}

// Parse reads a non-negative simulated time written as a decimal number and
// a unit: fs, ps, ns, us (or µs), ms or s, as in "50us", "1.5ms" or
// "0.25 s". A bare 0 needs no unit. The value is rounded to the nearest
// femtosecond; one that does not fit a Time is an error.
func Parse(s string) (Time, error) {
	text := strings.TrimSpace(s)
	if text == "0" {
		return 0, nil
	}
	for _, u := range units {
		num, ok := strings.CutSuffix(text, u.suffix)
		if !ok {
			continue
		}
		num = strings.TrimSpace(num)
		if num == "" || strings.ContainsAny(num, "eE/+-") {
			break
		}
		r, ok := new(big.Rat).SetString(num)
		if !ok {
			break
		}
		r.Mul(r, new(big.Rat).SetInt64(int64(u.t)))
		// Round half up to the nearest femtosecond.
		r.Add(r, big.NewRat(1, 2))
		n := new(big.Int).Quo(r.Num(), r.Denom())
		if !n.IsInt64() || n.Int64() == int64(Never) {
			return 0, fmt.Errorf("%q is too long a time (the most is about 9200 s)", s)
		}
		return Time(n.Int64()), nil
	}
	return 0, fmt.Errorf("%q is not a time: write a number and a unit (fs, ps, ns, us, ms, s), such as 50us or 1.5ms", s)
}
