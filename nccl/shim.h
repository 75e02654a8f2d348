//go:build cgo

// partbench's own declarations of the NCCL entry points it calls, written
// from the ABI facts of the public nccl.h (no NCCL header is included):
// ncclResult_t, ncclDataType_t and ncclRedOp_t are int-sized enums;
// ncclComm_t is an opaque pointer and cudaStream_t another; ncclUniqueId is
// 128 bytes passed by value. The library's functions are reached through a
// table of pointers filled from dlsym (see capi.go); the wrappers below are
// the only code that calls through it.
#ifndef PARTBENCH_NCCL_SHIM_H
#define PARTBENCH_NCCL_SHIM_H

#include <stddef.h>
#include <stdint.h>

typedef int pbResult;

// ncclUniqueId: NCCL_UNIQUE_ID_BYTES = 128.
typedef struct { char internal[128]; } pbUniqueId;

// The leading fields of ncclConfig_t as of NCCL 2.17 (version field 21700).
// The library reads only `size` bytes and fills later fields with its
// defaults, so this prefix is valid for every NCCL >= 2.14.
typedef struct {
	size_t size;          // sizeof(pbConfig)
	unsigned int magic;   // NCCL_API_MAGIC 0xcafebeef
	unsigned int version; // the NCCL_VERSION_CODE this layout matches
	int blocking;
	int cgaClusterSize;
	int minCTAs;
	int maxCTAs;
	const char* netName;
} pbConfig;

// Symbol slots; capi.go lists their names in this order.
enum {
	PB_GET_VERSION, PB_GET_UNIQUE_ID, PB_COMM_INIT_RANK, PB_COMM_INIT_RANK_CONFIG,
	PB_COMM_DESTROY, PB_COMM_ABORT, PB_COMM_GET_ASYNC_ERROR, PB_GET_ERROR_STRING,
	PB_GET_LAST_ERROR, PB_ALL_REDUCE, PB_ALL_GATHER, PB_REDUCE_SCATTER, PB_BROADCAST,
	PB_SEND, PB_RECV, PB_GROUP_START, PB_GROUP_END, PB_COMM_COUNT, PB_COMM_USER_RANK,
	PB_NUM_SYMS
};

typedef struct pbNccl pbNccl;

pbNccl* pb_nccl_new(void);
void pb_nccl_free(pbNccl* s);
void pb_nccl_set(pbNccl* s, int slot, void* fn);
int pb_nccl_has(const pbNccl* s, int slot);

pbResult pb_get_version(const pbNccl* s, int* version);
pbResult pb_get_unique_id(const pbNccl* s, pbUniqueId* id);
pbResult pb_comm_init_rank(const pbNccl* s, uintptr_t* comm, int nranks, const pbUniqueId* id, int rank);
pbResult pb_comm_init_rank_config(const pbNccl* s, uintptr_t* comm, int nranks, const pbUniqueId* id, int rank, pbConfig* cfg);
pbResult pb_comm_destroy(const pbNccl* s, uintptr_t comm);
pbResult pb_comm_abort(const pbNccl* s, uintptr_t comm);
pbResult pb_comm_get_async_error(const pbNccl* s, uintptr_t comm, pbResult* async);
const char* pb_get_error_string(const pbNccl* s, pbResult r);
const char* pb_get_last_error(const pbNccl* s, uintptr_t comm);
pbResult pb_all_reduce(const pbNccl* s, uintptr_t send, uintptr_t recv, size_t count, int dt, int op, uintptr_t comm, uintptr_t stream);
pbResult pb_all_gather(const pbNccl* s, uintptr_t send, uintptr_t recv, size_t sendcount, int dt, uintptr_t comm, uintptr_t stream);
pbResult pb_reduce_scatter(const pbNccl* s, uintptr_t send, uintptr_t recv, size_t recvcount, int dt, int op, uintptr_t comm, uintptr_t stream);
pbResult pb_broadcast(const pbNccl* s, uintptr_t send, uintptr_t recv, size_t count, int dt, int root, uintptr_t comm, uintptr_t stream);
pbResult pb_send(const pbNccl* s, uintptr_t buf, size_t count, int dt, int peer, uintptr_t comm, uintptr_t stream);
pbResult pb_recv(const pbNccl* s, uintptr_t buf, size_t count, int dt, int peer, uintptr_t comm, uintptr_t stream);
pbResult pb_group_start(const pbNccl* s);
pbResult pb_group_end(const pbNccl* s);
pbResult pb_comm_count(const pbNccl* s, uintptr_t comm, int* count);
pbResult pb_comm_user_rank(const pbNccl* s, uintptr_t comm, int* rank);

// Layout facts for the layout test (C's view of the boundary structs).
size_t pb_sizeof_unique_id(void);
size_t pb_sizeof_config(void);
size_t pb_offsetof_config(int field);

#endif
