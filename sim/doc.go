// Package sim makes every time estimate: the roofline cost of each op with
// L2 residency, collectives by algorithm and protocol over the topology,
// point-to-point transfers, and a discrete-event timeline over ranks and
// micro-batches from which TTFT, TPOT, TPS and pipeline bubbles come.
//
// It must not touch a GPU: it reads a partition.Plan and topology facts only.
package sim
