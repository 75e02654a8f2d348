package model

import "github.com/partbench/partbench/arch"

// Numerical constants of the synthetic model, shared by every backend (the
// defaults of package arch).
const (
	NormEps   = arch.DefaultNormEps   // the norms' ε
	RopeTheta = arch.DefaultRopeTheta // rotary embedding base θ
)

// The architecture's features are defined by the model description
// (package arch, one file per family); these names are kept so a backend
// reads them beside the Shard.
type (
	// Norm is a normalization layer's kind.
	Norm = arch.Norm
	// Positions is how token positions enter the model.
	Positions = arch.Positions
	// MLP is the feed-forward block's activation.
	MLP = arch.MLP
	// Arch is what distinguishes one architecture's arithmetic from
	// another's (arch.Features).
	Arch = arch.Features
)

// The kinds of norm, positions and MLP (see package arch).
const (
	RMSNorm   = arch.RMSNorm
	LayerNorm = arch.LayerNorm
	Rotary    = arch.Rotary
	Learned   = arch.Learned
	GatedSiLU = arch.GatedSiLU
	GELUTanh  = arch.GELUTanh
)
