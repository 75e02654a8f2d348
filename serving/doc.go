// Package serving answers request-level questions: request workloads
// (arrival processes, length distributions, traces, ShareGPT-format
// datasets), the iteration-level batching scheduler (static, continuous,
// chunked prefill, a paged KV cache with preemption, data-parallel replicas
// behind a router), the discrete-event simulator that drives it, the engine
// that drives it for real (one batched pass per iteration on a backend of
// the registry; in process, behind an OpenAI-style HTTP endpoint, or inside
// partbench serve on gRPC and raw TCP), the load generators that measure a
// server at the client, and benchmark_serving's metrics (TTFT, TPOT, ITL,
// E2EL, goodput).
//
// It must not price an op itself (sim.IterationModel does) nor build a
// second Program (the engine runs partition.Plan.Pass), and it never prints.
package serving
