// nccl/testdata/fakenccl.c with one change for exec/ncclcomm's tests: the
// original ncclGetUniqueId always returns the same id, whose byte 0 (3)
// selects the fake's FAIL and ASYNC behaviours. Here every id is new
// (bytes 1–8 count the ids made) and byte 0 is the decimal value of
// $PARTBENCH_FAKE_NCCL_MODE (0, a healthy communicator, when unset), so a
// test chooses the behaviour of every communicator a run creates.
// Build: gcc -shared -fPIC -I<repo>/nccl/testdata fakenccl_ids.c
#define ncclGetUniqueId fakeOriginalGetUniqueId
#include "fakenccl.c"
#undef ncclGetUniqueId

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
	static atomic_ulong made;
	unsigned long n = atomic_fetch_add(&made, 1) + 1;
	const char* mode = getenv("PARTBENCH_FAKE_NCCL_MODE");
	memset(id->internal, 0, sizeof id->internal);
	id->internal[0] = (char)(mode ? atoi(mode) : 0);
	for (int i = 0; i < 8; i++) id->internal[1 + i] = (char)(n >> (8 * i));
	id->internal[127] = 0x5a;
	return OK;
}
