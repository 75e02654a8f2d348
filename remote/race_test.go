//go:build race

package remote

// raceEnabled: the race detector multiplies a process's memory (shadow
// memory), so memory bounds are reported, not asserted, under -race.
const raceEnabled = true
