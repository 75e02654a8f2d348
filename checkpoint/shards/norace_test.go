//go:build !race

package shards

// raceEnabled: built without -race.
const raceEnabled = false
