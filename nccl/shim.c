//go:build cgo

// The static shim: a table of NCCL function pointers (filled from dlsym by
// capi.go) and one wrapper per entry point. Wrappers never check for a
// missing pointer: capi.go refuses a library that lacks a mandatory symbol
// and checks pb_nccl_has before calling an optional one.
#include <stdlib.h>
#include "shim.h"

typedef void* pbComm;
typedef void* pbStream;

struct pbNccl {
	pbResult (*getVersion)(int*);
	pbResult (*getUniqueId)(pbUniqueId*);
	pbResult (*commInitRank)(pbComm*, int, pbUniqueId, int);
	pbResult (*commInitRankConfig)(pbComm*, int, pbUniqueId, int, pbConfig*);
	pbResult (*commDestroy)(pbComm);
	pbResult (*commAbort)(pbComm);
	pbResult (*commGetAsyncError)(pbComm, pbResult*);
	const char* (*getErrorString)(pbResult);
	const char* (*getLastError)(pbComm);
	pbResult (*allReduce)(const void*, void*, size_t, int, int, pbComm, pbStream);
	pbResult (*allGather)(const void*, void*, size_t, int, pbComm, pbStream);
	pbResult (*reduceScatter)(const void*, void*, size_t, int, int, pbComm, pbStream);
	pbResult (*broadcast)(const void*, void*, size_t, int, int, pbComm, pbStream);
	pbResult (*send)(const void*, size_t, int, int, pbComm, pbStream);
	pbResult (*recv)(void*, size_t, int, int, pbComm, pbStream);
	pbResult (*groupStart)(void);
	pbResult (*groupEnd)(void);
	pbResult (*commCount)(pbComm, int*);
	pbResult (*commUserRank)(pbComm, int*);
};

// The ABI facts this file relies on, checked where the compiler can.
_Static_assert(sizeof(pbUniqueId) == 128, "ncclUniqueId is 128 bytes");
_Static_assert(sizeof(int) == 4, "NCCL enums are 4-byte ints");

pbNccl* pb_nccl_new(void) { return calloc(1, sizeof(pbNccl)); }
void pb_nccl_free(pbNccl* s) { free(s); }

#define SLOT(id, field) case id: *(void**)(&s->field) = fn; break // POSIX: a data pointer holds a function address
void pb_nccl_set(pbNccl* s, int slot, void* fn) {
	switch (slot) {
	SLOT(PB_GET_VERSION, getVersion);
	SLOT(PB_GET_UNIQUE_ID, getUniqueId);
	SLOT(PB_COMM_INIT_RANK, commInitRank);
	SLOT(PB_COMM_INIT_RANK_CONFIG, commInitRankConfig);
	SLOT(PB_COMM_DESTROY, commDestroy);
	SLOT(PB_COMM_ABORT, commAbort);
	SLOT(PB_COMM_GET_ASYNC_ERROR, commGetAsyncError);
	SLOT(PB_GET_ERROR_STRING, getErrorString);
	SLOT(PB_GET_LAST_ERROR, getLastError);
	SLOT(PB_ALL_REDUCE, allReduce);
	SLOT(PB_ALL_GATHER, allGather);
	SLOT(PB_REDUCE_SCATTER, reduceScatter);
	SLOT(PB_BROADCAST, broadcast);
	SLOT(PB_SEND, send);
	SLOT(PB_RECV, recv);
	SLOT(PB_GROUP_START, groupStart);
	SLOT(PB_GROUP_END, groupEnd);
	SLOT(PB_COMM_COUNT, commCount);
	SLOT(PB_COMM_USER_RANK, commUserRank);
	}
}

int pb_nccl_has(const pbNccl* s, int slot) {
	switch (slot) {
	case PB_COMM_INIT_RANK_CONFIG: return s->commInitRankConfig != NULL;
	case PB_GET_LAST_ERROR: return s->getLastError != NULL;
	}
	return 1; // mandatory slots are always filled
}

#define P(x) ((void*)(x))

pbResult pb_get_version(const pbNccl* s, int* v) { return s->getVersion(v); }
pbResult pb_get_unique_id(const pbNccl* s, pbUniqueId* id) { return s->getUniqueId(id); }

pbResult pb_comm_init_rank(const pbNccl* s, uintptr_t* comm, int nranks, const pbUniqueId* id, int rank) {
	pbComm c = NULL;
	pbResult r = s->commInitRank(&c, nranks, *id, rank); // the id by value
	*comm = (uintptr_t)c;
	return r;
}

pbResult pb_comm_init_rank_config(const pbNccl* s, uintptr_t* comm, int nranks, const pbUniqueId* id, int rank, pbConfig* cfg) {
	pbComm c = NULL;
	pbResult r = s->commInitRankConfig(&c, nranks, *id, rank, cfg);
	*comm = (uintptr_t)c;
	return r;
}

pbResult pb_comm_destroy(const pbNccl* s, uintptr_t c) { return s->commDestroy(P(c)); }
pbResult pb_comm_abort(const pbNccl* s, uintptr_t c) { return s->commAbort(P(c)); }
pbResult pb_comm_get_async_error(const pbNccl* s, uintptr_t c, pbResult* a) { return s->commGetAsyncError(P(c), a); }
const char* pb_get_error_string(const pbNccl* s, pbResult r) { return s->getErrorString(r); }
const char* pb_get_last_error(const pbNccl* s, uintptr_t c) { return s->getLastError ? s->getLastError(P(c)) : NULL; }

pbResult pb_all_reduce(const pbNccl* s, uintptr_t send, uintptr_t recv, size_t count, int dt, int op, uintptr_t c, uintptr_t st) {
	return s->allReduce(P(send), P(recv), count, dt, op, P(c), P(st));
}
pbResult pb_all_gather(const pbNccl* s, uintptr_t send, uintptr_t recv, size_t sendcount, int dt, uintptr_t c, uintptr_t st) {
	return s->allGather(P(send), P(recv), sendcount, dt, P(c), P(st));
}
pbResult pb_reduce_scatter(const pbNccl* s, uintptr_t send, uintptr_t recv, size_t recvcount, int dt, int op, uintptr_t c, uintptr_t st) {
	return s->reduceScatter(P(send), P(recv), recvcount, dt, op, P(c), P(st));
}
pbResult pb_broadcast(const pbNccl* s, uintptr_t send, uintptr_t recv, size_t count, int dt, int root, uintptr_t c, uintptr_t st) {
	return s->broadcast(P(send), P(recv), count, dt, root, P(c), P(st));
}
pbResult pb_send(const pbNccl* s, uintptr_t buf, size_t count, int dt, int peer, uintptr_t c, uintptr_t st) {
	return s->send(P(buf), count, dt, peer, P(c), P(st));
}
pbResult pb_recv(const pbNccl* s, uintptr_t buf, size_t count, int dt, int peer, uintptr_t c, uintptr_t st) {
	return s->recv(P(buf), count, dt, peer, P(c), P(st));
}
pbResult pb_group_start(const pbNccl* s) { return s->groupStart(); }
pbResult pb_group_end(const pbNccl* s) { return s->groupEnd(); }
pbResult pb_comm_count(const pbNccl* s, uintptr_t c, int* n) { return s->commCount(P(c), n); }
pbResult pb_comm_user_rank(const pbNccl* s, uintptr_t c, int* r) { return s->commUserRank(P(c), r); }

size_t pb_sizeof_unique_id(void) { return sizeof(pbUniqueId); }
size_t pb_sizeof_config(void) { return sizeof(pbConfig); }
size_t pb_offsetof_config(int field) {
	switch (field) {
	case 0: return offsetof(pbConfig, size);
	case 1: return offsetof(pbConfig, magic);
	case 2: return offsetof(pbConfig, version);
	case 3: return offsetof(pbConfig, blocking);
	case 4: return offsetof(pbConfig, cgaClusterSize);
	case 5: return offsetof(pbConfig, minCTAs);
	case 6: return offsetof(pbConfig, maxCTAs);
	case 7: return offsetof(pbConfig, netName);
	}
	return (size_t)-1;
}
