//go:build cgo

package dl

/*
#cgo linux LDFLAGS: -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#include <link.h>
#endif

// dlopen and dlerror (thread-local) in one C call, so a goroutine moving
// between threads cannot read another thread's error.
static void* pb_dlopen(const char* path, int flags, char* err, size_t n) {
	void* h = dlopen(path, flags);
	if (h == NULL) {
		const char* e = dlerror();
		strncpy(err, e ? e : "unknown dlopen error", n - 1);
		err[n - 1] = 0;
	}
	return h;
}

static void* pb_dlsym(void* h, const char* sym, char* err, size_t n) {
	dlerror();
	void* p = dlsym(h, sym);
	const char* e = dlerror();
	if (e != NULL) {
		strncpy(err, e, n - 1);
		err[n - 1] = 0;
		return NULL;
	}
	if (p == NULL) {
		strncpy(err, "symbol resolves to NULL", n - 1);
		err[n - 1] = 0;
	}
	return p;
}

static int pb_dlclose(void* h, char* err, size_t n) {
	if (dlclose(h) != 0) {
		const char* e = dlerror();
		strncpy(err, e ? e : "unknown dlclose error", n - 1);
		err[n - 1] = 0;
		return -1;
	}
	return 0;
}

// The file the loader mapped for h ("" when the platform cannot say).
static const char* pb_dlfile(void* h) {
#ifdef __linux__
	struct link_map* m = NULL;
	if (dlinfo(h, RTLD_DI_LINKMAP, &m) == 0 && m != NULL && m->l_name != NULL) {
		return m->l_name;
	}
#endif
	return "";
}
*/
import "C"

import (
	"errors"
	"unsafe"
)

// dlopen flags, as the platform's <dlfcn.h> defines them.
const (
	Lazy   = int(C.RTLD_LAZY)
	Now    = int(C.RTLD_NOW)
	Global = int(C.RTLD_GLOBAL)
	Local  = int(C.RTLD_LOCAL)
)

const cgoEnabled = true

const errLen = 512

func sysOpen(path string, flags int) (unsafe.Pointer, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var buf [errLen]C.char
	h := C.pb_dlopen(cpath, C.int(flags), &buf[0], errLen)
	if h == nil {
		return nil, errors.New(C.GoString(&buf[0]))
	}
	return h, nil
}

func sysSym(h unsafe.Pointer, sym string) (unsafe.Pointer, error) {
	csym := C.CString(sym)
	defer C.free(unsafe.Pointer(csym))
	var buf [errLen]C.char
	p := C.pb_dlsym(h, csym, &buf[0], errLen)
	if p == nil {
		return nil, errors.New(C.GoString(&buf[0]))
	}
	return p, nil
}

func sysClose(h unsafe.Pointer) error {
	var buf [errLen]C.char
	if C.pb_dlclose(h, &buf[0], errLen) != 0 {
		return errors.New(C.GoString(&buf[0]))
	}
	return nil
}

func sysFile(h unsafe.Pointer) string { return C.GoString(C.pb_dlfile(h)) }
