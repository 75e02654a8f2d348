package configs

import "strings"

// InPlaceWaitKind is the op-time kind of a collective's time in place
// beyond its back-to-back time: what a collective call, timed as a run's
// op timer times it, took on average more than the op-time table's entry
// for its kind, group and payload (measured back to back), after Size ns
// of compute since the rank's last collective or receive. calibrate
// measures it at each --op-ranks count no larger than the host's cores
// by running the op configs of that many ranks through the executor
// among process ranks, as a run does (calib/inplace.go): the partner's
// wake-up after its compute and the partners' arrival skew, which a
// back-to-back loop does not meet. Shape InPlaceWaitShape; sim adds it to
// a collective priced at that count (docs/costmodel.md, "Collectives in
// place"); Apply keeps it at the count it was measured at only.
const InPlaceWaitKind = "in_place_wait"

// InPlaceWaitShape is the shape of an in-place wait entry: the
// collective's kind and its entry's shape ("all_reduce ranks=2").
func InPlaceWaitShape(kind, shape string) string { return kind + " " + shape }

// inPlaceWaitShapeOK reports whether an in-place wait entry's shape names
// a collective and its group ("all_reduce ranks=2").
func inPlaceWaitShapeOK(shape string) bool {
	kind, rest, ok := strings.Cut(shape, " ")
	if !ok || (kind != "all_reduce" && kind != "all_gather") {
		return false
	}
	_, ok = groupRanks(OpTime{Shape: rest})
	return ok
}
