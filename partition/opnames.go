package partition

import (
	"sync"
	"sync/atomic"
)

// layerOpNames is the names of one layer's ops in a pass, layerName(l)
// followed by the op's own ("L03.wqkv"). They are the same strings in
// every pass of every plan, so they are put together once per layer index
// in a process, not again for every op built.
type layerOpNames struct {
	attnNorm, wqkv, attn, wo, attnAR, attnResidual string
	mlpNorm, wUp, act, wDown, mlpAR, mlpResidual   string
}

// newLayerOpNames is layer l's op names, put together.
func newLayerOpNames(l int) *layerOpNames {
	ln := layerName(l)
	return &layerOpNames{
		attnNorm: ln + "attn_norm", wqkv: ln + "wqkv", attn: ln + "attn", wo: ln + "wo",
		attnAR: ln + "attn.ar", attnResidual: ln + "attn_residual",
		mlpNorm: ln + "mlp_norm", wUp: ln + "w_up", act: ln + "act", wDown: ln + "w_down",
		mlpAR: ln + "mlp.ar", mlpResidual: ln + "mlp_residual",
	}
}

// opNames holds layerOpNames for layers 0, 1, … up to the highest index
// built so far. A table, once published, is never written again: a longer
// one replaces it (under mu), so readers load it without a lock.
var opNames struct {
	mu    sync.Mutex
	table atomic.Pointer[[]*layerOpNames]
}

// layerOpNamesOf is layer l's op names (l ≥ 0), shared by every caller.
func layerOpNamesOf(l int) *layerOpNames {
	if t := opNames.table.Load(); t != nil && l < len(*t) {
		return (*t)[l]
	}
	opNames.mu.Lock()
	defer opNames.mu.Unlock()
	var old []*layerOpNames
	if t := opNames.table.Load(); t != nil {
		old = *t
	}
	if l < len(old) {
		return old[l]
	}
	// Grow to at least twice the old length, so a model of L layers
	// builds its table in O(log L) copies.
	t := make([]*layerOpNames, max(l+1, 2*len(old), 64))
	copy(t, old)
	for i := len(old); i < len(t); i++ {
		t[i] = newLayerOpNames(i)
	}
	opNames.table.Store(&t)
	return t[l]
}
