// Package progress shows how far a long command is: a bar on standard
// error when it is a terminal, and, where asked (a rank under mpirun), a
// plain line every few seconds when it is not.
//
// It must not write to standard output, which --format json keeps clean.
package progress
