package configs

import (
	"fmt"
	"slices"
)

// CoreWaitKind is the op-time kind of the partners' scheduling delay: the
// wait per message step of a collective or a receive when a host runs more
// ranks than it has cores (measured by calibrate at Ranks ranks per host;
// sim charges it, docs/costmodel.md "Shared cores: the partners' scheduling
// delay"). Its shape is CoreWaitShape, its size 1.
const CoreWaitKind = "core_wait"

// CoreWaitShape is the shape of a core-wait entry: the host's cores.
func CoreWaitShape(cores int) string { return fmt.Sprintf("cores=%d", cores) }

// keepCoreWait keeps in ts the core-wait entries measured at exactly
// perHost ranks on a host of cores cores, and drops the others with a note:
// the wait depends on how many ranks share the cores, so one measured at
// another count does not price this placement.
func keepCoreWait(ts []OpTime, perHost, cores int) ([]OpTime, []string) {
	var notes []string
	var measured []int
	out := slices.DeleteFunc(slices.Clone(ts), func(t OpTime) bool {
		if t.Kind != CoreWaitKind {
			return false
		}
		if t.Ranks == perHost && t.Shape == CoreWaitShape(cores) && perHost > cores {
			return false
		}
		measured = append(measured, t.Ranks)
		return true
	})
	switch {
	case slices.ContainsFunc(out, func(t OpTime) bool { return t.Kind == CoreWaitKind }):
		notes = append(notes, fmt.Sprintf("the %d ranks per host outnumber its %d cores: collectives and blocking receives are charged the partners' scheduling delay measured at %d ranks", perHost, cores, perHost))
	case perHost > cores && len(measured) > 0:
		notes = append(notes, fmt.Sprintf("warning: the %d ranks per host outnumber its %d cores but the profile's core wait was measured at %v ranks per host, not %d: it is not used, and collectives are priced as if every partner were on a core (calibrate with --op-ranks including %d)", perHost, cores, measured, perHost, perHost))
	case perHost > cores:
		notes = append(notes, fmt.Sprintf("the %d ranks per host outnumber its %d cores and the profile has no core wait: collectives are priced as if every partner were on a core", perHost, cores))
	}
	return out, notes
}
