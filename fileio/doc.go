// Package fileio owns how partbench touches a path a user names: bounded
// reads of small inputs (a regular file of limited size, never a device or a
// pipe) and atomic writes that keep special files and symlinks intact.
// It must not know any file format.
package fileio
