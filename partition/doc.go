// Package partition owns the model arithmetic (parameters, FLOPs and bytes of
// every op), the strategies (TP×PP, layer-wise, explicit layer maps), the Plan
// (who holds which layer shard, KV cache and group), the per-rank Program of
// ordered ops that sim estimates and exec runs, and per-rank memory.
//
// It must not estimate time: that is sim's job.
package partition
