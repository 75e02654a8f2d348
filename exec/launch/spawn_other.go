//go:build !unix

package launch

import (
	"context"
	"errors"
	"time"
)

// DefaultGrace is how long Spawn lets ranks exit on their own.
const DefaultGrace = 10 * time.Second

// SpawnOptions configures Spawn (see the unix build).
type SpawnOptions struct {
	NProc int
	Argv  []string
}

// Spawn needs process groups and is only built for unix systems.
func Spawn(ctx context.Context, opts SpawnOptions) (int, error) {
	return 1, errors.New("launch: partbench run --nproc needs a unix system")
}
