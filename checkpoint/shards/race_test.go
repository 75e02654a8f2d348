//go:build race

package shards

// raceEnabled: built with -race, whose sync.Pool drops items at random (the
// reads' scratch buffers are then made again).
const raceEnabled = true
