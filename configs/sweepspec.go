package configs

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseSweep reads --sweep: KEY=LO:HI (doubling), KEY=LO:HI:+STEP (linear) or KEY=A,B,C.
func ParseSweep(s string) (string, []int, error) {
	key, spec, ok := strings.Cut(s, "=")
	bad := func(why string) (string, []int, error) {
		return "", nil, fmt.Errorf("--sweep %q: %s (forms: KEY=LO:HI doubling, KEY=LO:HI:+STEP, KEY=A,B,C)", s, why)
	}
	if !ok || key == "" || spec == "" {
		return bad("missing KEY=")
	}
	if _, known := Sweepable[key]; !known {
		return bad("unknown key; known: " + strings.Join(SweepKeys(), ", "))
	}
	atoi := func(x string) (int, error) {
		v, err := strconv.Atoi(strings.TrimSpace(x))
		if err != nil || v <= 0 {
			return 0, fmt.Errorf("%q is not a positive integer", x)
		}
		return v, nil
	}
	var vals []int
	if parts := strings.Split(spec, ":"); len(parts) >= 2 && len(parts) <= 3 {
		lo, err := atoi(parts[0])
		if err != nil {
			return bad(err.Error())
		}
		hi, err := atoi(parts[1])
		if err != nil || hi < lo {
			return bad("HI must be an integer ≥ LO")
		}
		step := 0
		if len(parts) == 3 {
			if !strings.HasPrefix(parts[2], "+") {
				return bad("STEP must be written +N")
			}
			if step, err = atoi(parts[2][1:]); err != nil {
				return bad(err.Error())
			}
		}
		for v := lo; v <= hi && len(vals) <= 4096; {
			vals = append(vals, v)
			if step > 0 {
				v += step
			} else {
				v *= 2
			}
		}
	} else {
		for _, x := range strings.Split(spec, ",") {
			v, err := atoi(x)
			if err != nil {
				return bad(err.Error())
			}
			vals = append(vals, v)
		}
	}
	if len(vals) > 4096 {
		return bad("more than 4096 values")
	}
	return key, vals, nil
}
