// Package loopback runs a remote server and its client in one process over
// loopback: the per-request overhead that calibration measures. It is the
// only remote room that imports both sides.
package loopback
