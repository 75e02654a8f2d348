//go:build cgo

package nccl

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"strings"
	"unsafe"

	"github.com/partbench/partbench/cgo/dl"
)

// symbols in the order of the PB_* slots in shim.h. Optional ones may be
// absent: ncclCommInitRankConfig (NCCL ≥ 2.14), ncclGetLastError (≥ 2.13).
// The mandatory set needs NCCL ≥ 2.7 (ncclSend/ncclRecv).
var symbols = [C.PB_NUM_SYMS]struct {
	name     string
	optional bool
}{
	C.PB_GET_VERSION:           {"ncclGetVersion", false},
	C.PB_GET_UNIQUE_ID:         {"ncclGetUniqueId", false},
	C.PB_COMM_INIT_RANK:        {"ncclCommInitRank", false},
	C.PB_COMM_INIT_RANK_CONFIG: {"ncclCommInitRankConfig", true},
	C.PB_COMM_DESTROY:          {"ncclCommDestroy", false},
	C.PB_COMM_ABORT:            {"ncclCommAbort", false},
	C.PB_COMM_GET_ASYNC_ERROR:  {"ncclCommGetAsyncError", false},
	C.PB_GET_ERROR_STRING:      {"ncclGetErrorString", false},
	C.PB_GET_LAST_ERROR:        {"ncclGetLastError", true},
	C.PB_ALL_REDUCE:            {"ncclAllReduce", false},
	C.PB_ALL_GATHER:            {"ncclAllGather", false},
	C.PB_REDUCE_SCATTER:        {"ncclReduceScatter", false},
	C.PB_BROADCAST:             {"ncclBroadcast", false},
	C.PB_SEND:                  {"ncclSend", false},
	C.PB_RECV:                  {"ncclRecv", false},
	C.PB_GROUP_START:           {"ncclGroupStart", false},
	C.PB_GROUP_END:             {"ncclGroupEnd", false},
	C.PB_COMM_COUNT:            {"ncclCommCount", false},
	C.PB_COMM_USER_RANK:        {"ncclCommUserRank", false},
}

// capi calls NCCL through the shim's table.
type capi struct{ t *C.pbNccl }

// bind looks up every symbol in lib and fills a new table. A missing
// mandatory symbol is an error that names each one missing.
func bind(lib *dl.Library) (api, error) {
	t := C.pb_nccl_new()
	if t == nil {
		return nil, fmt.Errorf("nccl: out of memory for the symbol table")
	}
	var missing []string
	for slot, s := range symbols {
		p, err := lib.Lookup(s.name)
		if err != nil {
			if !s.optional {
				missing = append(missing, s.name)
			}
			continue
		}
		C.pb_nccl_set(t, C.int(slot), p)
	}
	if len(missing) > 0 {
		C.pb_nccl_free(t)
		return nil, fmt.Errorf("nccl: %s lacks %s (partbench needs NCCL 2.7 or newer)",
			lib.File(), strings.Join(missing, ", "))
	}
	return capi{t}, nil
}

func (a capi) free() { C.pb_nccl_free(a.t) }

func (a capi) hasInitConfig() bool { return C.pb_nccl_has(a.t, C.PB_COMM_INIT_RANK_CONFIG) != 0 }

func (a capi) getVersion() (int, Result) {
	var v C.int
	r := C.pb_get_version(a.t, &v)
	return int(v), Result(r)
}

func (a capi) getUniqueID(id *UniqueID) Result {
	return Result(C.pb_get_unique_id(a.t, (*C.pbUniqueId)(unsafe.Pointer(id))))
}

func (a capi) commInitRank(nranks int, id *UniqueID, rank int) (uintptr, Result) {
	var comm C.uintptr_t
	r := C.pb_comm_init_rank(a.t, &comm, C.int(nranks), (*C.pbUniqueId)(unsafe.Pointer(id)), C.int(rank))
	return uintptr(comm), Result(r)
}

func (a capi) commInitRankConfig(nranks int, id *UniqueID, rank int, cfg Config) (uintptr, Result) {
	c := cConfig(cfg)
	if c.netName != nil {
		defer C.free(unsafe.Pointer(c.netName))
	}
	var comm C.uintptr_t
	r := C.pb_comm_init_rank_config(a.t, &comm, C.int(nranks), (*C.pbUniqueId)(unsafe.Pointer(id)), C.int(rank), &c)
	return uintptr(comm), Result(r)
}

func (a capi) commDestroy(comm uintptr) Result {
	return Result(C.pb_comm_destroy(a.t, C.uintptr_t(comm)))
}

func (a capi) commAbort(comm uintptr) Result {
	return Result(C.pb_comm_abort(a.t, C.uintptr_t(comm)))
}

func (a capi) commGetAsyncError(comm uintptr) (Result, Result) {
	var async C.pbResult
	r := C.pb_comm_get_async_error(a.t, C.uintptr_t(comm), &async)
	return Result(async), Result(r)
}

func (a capi) getErrorString(r Result) string {
	return C.GoString(C.pb_get_error_string(a.t, C.pbResult(r)))
}

func (a capi) getLastError(comm uintptr) string {
	return C.GoString(C.pb_get_last_error(a.t, C.uintptr_t(comm))) // NULL → ""
}

func (a capi) allReduce(send, recv uintptr, count int, dt DataType, op RedOp, comm, stream uintptr) Result {
	return Result(C.pb_all_reduce(a.t, C.uintptr_t(send), C.uintptr_t(recv), C.size_t(count),
		C.int(dt), C.int(op), C.uintptr_t(comm), C.uintptr_t(stream)))
}

func (a capi) allGather(send, recv uintptr, sendcount int, dt DataType, comm, stream uintptr) Result {
	return Result(C.pb_all_gather(a.t, C.uintptr_t(send), C.uintptr_t(recv), C.size_t(sendcount),
		C.int(dt), C.uintptr_t(comm), C.uintptr_t(stream)))
}

func (a capi) reduceScatter(send, recv uintptr, recvcount int, dt DataType, op RedOp, comm, stream uintptr) Result {
	return Result(C.pb_reduce_scatter(a.t, C.uintptr_t(send), C.uintptr_t(recv), C.size_t(recvcount),
		C.int(dt), C.int(op), C.uintptr_t(comm), C.uintptr_t(stream)))
}

func (a capi) broadcast(send, recv uintptr, count int, dt DataType, root int, comm, stream uintptr) Result {
	return Result(C.pb_broadcast(a.t, C.uintptr_t(send), C.uintptr_t(recv), C.size_t(count),
		C.int(dt), C.int(root), C.uintptr_t(comm), C.uintptr_t(stream)))
}

func (a capi) send(buf uintptr, count int, dt DataType, peer int, comm, stream uintptr) Result {
	return Result(C.pb_send(a.t, C.uintptr_t(buf), C.size_t(count), C.int(dt), C.int(peer),
		C.uintptr_t(comm), C.uintptr_t(stream)))
}

func (a capi) recv(buf uintptr, count int, dt DataType, peer int, comm, stream uintptr) Result {
	return Result(C.pb_recv(a.t, C.uintptr_t(buf), C.size_t(count), C.int(dt), C.int(peer),
		C.uintptr_t(comm), C.uintptr_t(stream)))
}

func (a capi) groupStart() Result { return Result(C.pb_group_start(a.t)) }
func (a capi) groupEnd() Result   { return Result(C.pb_group_end(a.t)) }

func (a capi) commCount(comm uintptr) (int, Result) {
	var n C.int
	r := C.pb_comm_count(a.t, C.uintptr_t(comm), &n)
	return int(n), Result(r)
}

func (a capi) commUserRank(comm uintptr) (int, Result) {
	var n C.int
	r := C.pb_comm_user_rank(a.t, C.uintptr_t(comm), &n)
	return int(n), Result(r)
}
