package stats

// ErrorDefinition says in words what ModelError computes; every header or
// column that shows a model error names it.
const ErrorDefinition = "(model−meas)/meas"

// ModelError is partbench's one signed error of a model against a
// measurement: (modeled − measured) / measured. Positive: the model
// overestimates (predicts a longer time, a larger count). ok is false when
// measured is 0 and modeled is not (no relative error exists); both 0 is
// an error of 0.
func ModelError(modeled, measured float64) (err float64, ok bool) {
	return RelDiff(measured, modeled)
}

// RelDiff is the relative difference of x from a reference, (x − ref)/ref,
// with ok false when ref is 0 and x is not. ModelError is RelDiff with the
// measurement as the reference.
func RelDiff(ref, x float64) (d float64, ok bool) {
	if ref == 0 {
		return 0, x == 0
	}
	return (x - ref) / ref, true
}

// MeasuredBand is the range of measurements whose ModelError against
// modeled is within ±tol (0 ≤ tol < 1, modeled ≥ 0): from modeled/(1+tol)
// (the model 100·tol % high) to modeled/(1−tol) (the model 100·tol % low).
// A figure's tolerance band draws this range, so a point inside it is a
// row that is not flagged.
func MeasuredBand(modeled, tol float64) (lo, hi float64) {
	return modeled / (1 + tol), modeled / (1 - tol)
}
