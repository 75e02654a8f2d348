// Package claims judges a document's claimed numbers against partbench's
// model and against physical bounds: each claim is consistent, inconsistent
// with the model (by how much), physically impossible (which bound, by how
// much), or contradicted by the document's own other numbers.
//
// It must not estimate anything itself: the numbers come from sim.
package claims
