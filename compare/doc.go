// Package compare holds a measurement against the estimate of the same Plan:
// the rows of measured beside modeled with their relative errors and flags,
// the exact checks of communication counts, strict mode, the run document,
// the emulated timeline (measured compute, modeled communication) and the L2
// residency modeled beside the measured reuse proxy.
//
// It sits between {sim, exec} and report: it must not print (report renders
// what it returns), measure (exec does) or estimate (sim does).
package compare
