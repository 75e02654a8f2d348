package nccl

// api is the library as the Go side sees it: one method per NCCL entry
// point, comm and stream handles as uintptr. capi.go implements it through
// the C shim; a build without cgo has no implementation, so nothing past
// Load can be reached there.
type api interface {
	getVersion() (int, Result)
	getUniqueID(id *UniqueID) Result
	hasInitConfig() bool
	commInitRank(nranks int, id *UniqueID, rank int) (uintptr, Result)
	commInitRankConfig(nranks int, id *UniqueID, rank int, cfg Config) (uintptr, Result)
	commDestroy(comm uintptr) Result
	commAbort(comm uintptr) Result
	commGetAsyncError(comm uintptr) (async, r Result)
	getErrorString(r Result) string
	getLastError(comm uintptr) string // "" when the library has no ncclGetLastError
	allReduce(send, recv uintptr, count int, dt DataType, op RedOp, comm, stream uintptr) Result
	allGather(send, recv uintptr, sendcount int, dt DataType, comm, stream uintptr) Result
	reduceScatter(send, recv uintptr, recvcount int, dt DataType, op RedOp, comm, stream uintptr) Result
	broadcast(send, recv uintptr, count int, dt DataType, root int, comm, stream uintptr) Result
	send(buf uintptr, count int, dt DataType, peer int, comm, stream uintptr) Result
	recv(buf uintptr, count int, dt DataType, peer int, comm, stream uintptr) Result
	groupStart() Result
	groupEnd() Result
	commCount(comm uintptr) (int, Result)
	commUserRank(comm uintptr) (int, Result)
	free()
}
