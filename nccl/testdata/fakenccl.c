// A fake libnccl.so.2 for partbench's binding tests: the NCCL entry points
// with host-memory behaviour, built by the tests with gcc. It declares its
// own types, as the binding does.
//
// Behaviour is chosen per communicator by byte 0 of the unique id:
//   bit 1 (FAIL)  every collective and p2p call returns ncclSystemError;
//   bit 2 (ASYNC) ncclCommGetAsyncError reports ncclRemoteError from the
//                 third poll on;
//   bit 4 (HANG)  collectives block until ncclCommAbort (at most 10 s).
// ncclGetLastError returns the last error, or after a successful call a
// trace of that call's arguments, so tests can see what crossed the ABI.
// Build variants: -DFAKE_NO_COLLECTIVES drops ncclAllReduce and ncclSend;
// -DFAKE_OLD is NCCL 2.7.8 (old version code, no ncclGetLastError, no
// ncclCommInitRankConfig).
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int ncclResult_t;
typedef struct { char internal[128]; } ncclUniqueId;
typedef struct {
	size_t size;
	unsigned int magic, version;
	int blocking, cgaClusterSize, minCTAs, maxCTAs;
	const char* netName;
} fakeConfig;

enum { OK = 0, SYSTEM_ERROR = 2, INTERNAL_ERROR = 3, INVALID_ARGUMENT = 4, REMOTE_ERROR = 6, IN_PROGRESS = 7 };
enum { MODE_FAIL = 1, MODE_ASYNC = 2, MODE_HANG = 4 };

struct fakeComm {
	int nranks, rank, mode;
	atomic_int aborted, polls, pending;
};

static char last[512];
static _Thread_local int groupDepth; // per thread, as in NCCL

static void note(const char* fmt, ...) {
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(last, sizeof last, fmt, ap);
	va_end(ap);
}

static size_t elem(int dt) {
	static const size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
	return dt >= 0 && dt < 12 ? sizes[dt] : 0;
}

ncclResult_t ncclGetVersion(int* v) {
#ifdef FAKE_OLD
	*v = 2708;
#else
	*v = 22703;
#endif
	return OK;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
	for (int i = 0; i < 128; i++) id->internal[i] = (char)(i * 7 + 3);
	return OK;
}

static ncclResult_t initComm(void** out, int nranks, ncclUniqueId id, int rank, int blocking) {
	if (nranks < 1 || rank < 0 || rank >= nranks) {
		note("fake: rank %d of %d", rank, nranks);
		return INVALID_ARGUMENT;
	}
	struct fakeComm* c = calloc(1, sizeof *c);
	c->nranks = nranks;
	c->rank = rank;
	c->mode = (unsigned char)id.internal[0];
	*out = c;
	note("ncclCommInitRank(nranks=%d, rank=%d, id[0]=%d, id[127]=%d)", nranks, rank,
	     (unsigned char)id.internal[0], (unsigned char)id.internal[127]);
	if (!blocking) {
		atomic_store(&c->pending, 2); // ready after two more polls
		return IN_PROGRESS;
	}
	return OK;
}

ncclResult_t ncclCommInitRank(void** comm, int nranks, ncclUniqueId id, int rank) {
	return initComm(comm, nranks, id, rank, 1);
}

#ifndef FAKE_OLD
ncclResult_t ncclCommInitRankConfig(void** comm, int nranks, ncclUniqueId id, int rank, fakeConfig* cfg) {
	if (cfg->magic != 0xcafebeef || cfg->size != 40 || cfg->version < 21400) {
		note("fake: bad config size=%zu magic=%#x version=%u", cfg->size, cfg->magic, cfg->version);
		return INVALID_ARGUMENT;
	}
	int blocking = cfg->blocking == INT_MIN ? 1 : cfg->blocking;
	ncclResult_t r = initComm(comm, nranks, id, rank, blocking);
	if (r == OK || r == IN_PROGRESS) {
		note("ncclCommInitRankConfig(nranks=%d, rank=%d, size=%zu, version=%u, blocking=%d, "
		     "cgaClusterSize=%d, minCTAs=%d, maxCTAs=%d, netName=%s)",
		     nranks, rank, cfg->size, cfg->version, cfg->blocking, cfg->cgaClusterSize,
		     cfg->minCTAs, cfg->maxCTAs, cfg->netName ? cfg->netName : "(null)");
	}
	return r;
}

const char* ncclGetLastError(void* comm) {
	(void)comm;
	return last;
}
#endif

const char* ncclGetErrorString(ncclResult_t r) {
	static char buf[64];
	snprintf(buf, sizeof buf, "fake error string %d", r);
	return buf;
}

ncclResult_t ncclCommGetAsyncError(void* comm, ncclResult_t* e) {
	struct fakeComm* c = comm;
	int n = atomic_fetch_add(&c->polls, 1) + 1;
	if (atomic_load(&c->pending) > 0) {
		atomic_fetch_sub(&c->pending, 1);
		*e = IN_PROGRESS;
		return OK;
	}
	if ((c->mode & MODE_ASYNC) && n >= 3) {
		note("fake: rank 2 stopped answering");
		*e = REMOTE_ERROR;
		return OK;
	}
	*e = OK;
	return OK;
}

// Abort does not free: a hung call may still be reading the comm.
ncclResult_t ncclCommAbort(void* comm) {
	atomic_store(&((struct fakeComm*)comm)->aborted, 1);
	return OK;
}

ncclResult_t ncclCommDestroy(void* comm) {
	free(comm);
	return OK;
}

ncclResult_t ncclCommCount(void* comm, int* n) { *n = ((struct fakeComm*)comm)->nranks; return OK; }
ncclResult_t ncclCommUserRank(void* comm, int* r) { *r = ((struct fakeComm*)comm)->rank; return OK; }

static ncclResult_t enter(struct fakeComm* c, const char* call) {
	if (c->mode & MODE_FAIL) {
		note("fake: %s: socket to rank 3 closed", call);
		return SYSTEM_ERROR;
	}
	if (c->mode & MODE_HANG) {
		for (int i = 0; i < 10000 && !atomic_load(&c->aborted); i++) usleep(1000);
		if (atomic_load(&c->aborted)) {
			note("fake: %s interrupted by abort", call);
			return REMOTE_ERROR;
		}
		note("fake: %s hung for 10 s", call);
		return INTERNAL_ERROR;
	}
	return OK;
}

#ifndef FAKE_NO_COLLECTIVES
ncclResult_t ncclAllReduce(const void* s, void* r, size_t count, int dt, int op, void* comm, void* stream) {
	ncclResult_t e = enter(comm, "ncclAllReduce");
	if (e != OK) return e;
	note("ncclAllReduce(count=%zu, datatype=%d, op=%d, stream=%#lx)", count, dt, op, (unsigned long)stream);
	if (s != r) memcpy(r, s, count * elem(dt));
	return OK;
}

ncclResult_t ncclSend(const void* buf, size_t count, int dt, int peer, void* comm, void* stream) {
	ncclResult_t e = enter(comm, "ncclSend");
	if (e != OK) return e;
	(void)buf;
	note("ncclSend(count=%zu, datatype=%d, peer=%d, stream=%#lx)", count, dt, peer, (unsigned long)stream);
	return OK;
}
#endif

// Every rank holds the same data, so the gathered buffer is send repeated.
ncclResult_t ncclAllGather(const void* s, void* r, size_t sendcount, int dt, void* comm, void* stream) {
	struct fakeComm* c = comm;
	ncclResult_t e = enter(c, "ncclAllGather");
	if (e != OK) return e;
	note("ncclAllGather(sendcount=%zu, datatype=%d, stream=%#lx)", sendcount, dt, (unsigned long)stream);
	for (int p = 0; p < c->nranks; p++) memcpy((char*)r + p * sendcount * elem(dt), s, sendcount * elem(dt));
	return OK;
}

ncclResult_t ncclReduceScatter(const void* s, void* r, size_t recvcount, int dt, int op, void* comm, void* stream) {
	struct fakeComm* c = comm;
	ncclResult_t e = enter(c, "ncclReduceScatter");
	if (e != OK) return e;
	note("ncclReduceScatter(recvcount=%zu, datatype=%d, op=%d, stream=%#lx)", recvcount, dt, op, (unsigned long)stream);
	memcpy(r, (const char*)s + c->rank * recvcount * elem(dt), recvcount * elem(dt));
	return OK;
}

ncclResult_t ncclBroadcast(const void* s, void* r, size_t count, int dt, int root, void* comm, void* stream) {
	ncclResult_t e = enter(comm, "ncclBroadcast");
	if (e != OK) return e;
	note("ncclBroadcast(count=%zu, datatype=%d, root=%d, stream=%#lx)", count, dt, root, (unsigned long)stream);
	if (s != r) memcpy(r, s, count * elem(dt));
	return OK;
}

ncclResult_t ncclRecv(void* buf, size_t count, int dt, int peer, void* comm, void* stream) {
	ncclResult_t e = enter(comm, "ncclRecv");
	if (e != OK) return e;
	note("ncclRecv(count=%zu, datatype=%d, peer=%d, stream=%#lx)", count, dt, peer, (unsigned long)stream);
	memset(buf, peer, count * elem(dt));
	return OK;
}

ncclResult_t ncclGroupStart(void) { groupDepth++; return OK; }

ncclResult_t ncclGroupEnd(void) {
	if (groupDepth == 0) {
		note("fake: ncclGroupEnd without ncclGroupStart");
		return 5; // ncclInvalidUsage
	}
	groupDepth--;
	note("ncclGroupEnd(depth=%d)", groupDepth);
	return OK;
}
