package cpu

// MatMul is the backend's GEMM on bare slices (the package's MatMul, the
// one its Gemm ops run): calib times it through a Compute it takes from
// exec/backend's registry.
func (c *Compute) MatMul(m, n, k int, x, w, out []float32) { MatMul(m, n, k, x, w, out) }
