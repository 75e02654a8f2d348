package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/exec/backend"
	"github.com/partbench/partbench/exec/tcpcomm"
)

// addTransportFlag adds --transport: how the CPU backend's ranks on one host
// move their data. It reaches every rank of `run --nproc-per-node`.
func (o *runOptions) addTransportFlag(f *pflag.FlagSet) {
	f.StringVar(&o.transport, "transport", "", "with --backend cpu: how ranks on one host communicate: shm (shared memory; TCP between hosts), tcp, or auto (shm where a segment can be made) (default: "+tcpcomm.TransportEnv+", else auto)")
}

// checkTransport refuses a --transport that is no transport, or that cannot
// act: --check and --emulate-ranks run every rank in this process.
func (o *runOptions) checkTransport() error {
	if o.transport == "" {
		return nil
	}
	if _, err := tcpcomm.ParseTransport("--transport", o.transport); err != nil {
		return err
	}
	if o.check || o.emulate > 0 {
		return fmt.Errorf("--transport %s: --check and --emulate-ranks run every rank in this process (exec/localcomm), with no transport to choose", o.transport)
	}
	return nil
}

// transportComm is the communicator constructor of a rank of backend name:
// newComm, or the CPU backend's with --transport's transport.
func (o *runOptions) transportComm(name string, newComm backend.NewCommFunc) (backend.NewCommFunc, error) {
	if o.transport == "" {
		return newComm, nil
	}
	t, err := tcpcomm.ParseTransport("--transport", o.transport)
	if err != nil {
		return nil, err
	}
	if name != configs.BackendCPU {
		return nil, fmt.Errorf("--transport %s: only the CPU backend's communicator has transports; the %s backend's ranks communicate through NCCL, which picks its own (leave --transport out, or use --backend cpu)", o.transport, name)
	}
	return backend.TCPCommWith(t), nil
}
