package partition

// NodeRuns cuts the TP indices [0, n) into runs [t0, t1) over which
// neither rank a+t nor rank b+t crosses a node boundary (nodes of
// gpusPerNode GPUs, numbered node-major as topology.Topology numbers them),
// calling f for each run in order. The path between ranks a+t and b+t
// depends on their nodes alone (and on whether they are one rank, the same
// for every t: topology.Topology.Path), so it is one path over a run: a
// caller looks it up once per run, about 2n / gpusPerNode + 1 times, not n.
func NodeRuns(a, b, n, gpusPerNode int, f func(t0, t1 int)) {
	g := max(1, gpusPerNode)
	for t0 := 0; t0 < n; {
		t1 := min(n, t0+min(g-(a+t0)%g, g-(b+t0)%g))
		f(t0, t1)
		t0 = t1
	}
}
