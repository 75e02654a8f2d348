package configs

import (
	"fmt"
	"slices"
	"strings"
)

// TurnsKindPrefix starts the kind of a compute op time measured with the
// host's Ranks process ranks taking turns — a token passed round them,
// each computing one pass of its Program while it holds the token, as a
// pipeline's stages do — rather than all at once: "turns:gemm",
// "turns:attention", … with the shape, size and context of the kind after
// the prefix. Between two of its turns every other rank has run, so a
// rank's caches hold what they left. sim prices an op from it where its
// rank computes alone and from the entry measured at once where every rank
// computes, in proportion between (docs/costmodel.md, "Op times taking
// turns"). calibrate measures it at each --op-ranks count above the host's
// cores; Apply keeps it at that count only.
const TurnsKindPrefix = "turns:"

// TurnsKind is the kind of kind's op time taken in turns.
func TurnsKind(kind string) string { return TurnsKindPrefix + kind }

// IsTurnsKind reports whether kind is an op time taken in turns.
func IsTurnsKind(kind string) bool { return strings.HasPrefix(kind, TurnsKindPrefix) }

// keepTurns replaces the entries taken in turns in times (picked by
// OpTimesFor) with those of all measured at exactly ranks ranks, when the
// ranks outnumber the host's cores (where sim's shared-core stretch runs
// and tells which ranks compute alone), and says so in a note; measured at
// another count, they are dropped with a note naming the counts: what
// the other ranks leave in a rank's caches depends on how many there are.
func keepTurns(times, all []OpTime, ranks, cores int) ([]OpTime, []string) {
	out := slices.DeleteFunc(slices.Clone(times), func(t OpTime) bool { return IsTurnsKind(t.Kind) })
	var measured []int
	kept := 0
	for _, t := range all {
		if !IsTurnsKind(t.Kind) {
			continue
		}
		if t.Ranks == ranks && ranks > cores {
			out = append(out, t)
			kept++
		} else if !slices.Contains(measured, t.Ranks) {
			measured = append(measured, t.Ranks)
		}
	}
	slices.Sort(measured)
	switch {
	case kept > 0:
		return out, []string{fmt.Sprintf("%d compute op times measured with the %d ranks taking turns price the ops of a rank computing alone (the entries measured at once those where every rank computes; in proportion between)", kept, ranks)}
	case ranks > cores && len(measured) > 0:
		return out, []string{fmt.Sprintf("note: the profile's compute op times taken in turns were measured at %v ranks, not the config's %d: compute ops are priced from those measured at once (calibrate with --op-ranks including %d)", measured, ranks, ranks)}
	}
	return out, nil
}
