package cuda

import "fmt"

// FuncAttribute is a CUfunction_attribute (cuda.h; the values are fixed
// numbers of the public driver API).
type FuncAttribute int32

// The function attributes partbench reads or sets.
const (
	FuncMaxThreadsPerBlock FuncAttribute = 0 // CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK
	FuncSharedSizeBytes    FuncAttribute = 1 // CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES (static shared memory)
	FuncLocalSizeBytes     FuncAttribute = 3 // CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES (per thread: spills and stack)
	FuncNumRegs            FuncAttribute = 4 // CU_FUNC_ATTRIBUTE_NUM_REGS
	// FuncMaxDynamicSharedBytes is the most dynamic shared memory a launch
	// of the function may ask for: 48 KB unless raised (up to the device's
	// AttrMaxSharedMemoryPerBlockOpt minus the static shared memory).
	FuncMaxDynamicSharedBytes FuncAttribute = 8 // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
)

// DefaultDynamicSharedBytes is the dynamic shared memory a launch may use
// without raising FuncMaxDynamicSharedBytes (48 KiB on every architecture
// since sm_20).
const DefaultDynamicSharedBytes = 48 << 10

// SetAttribute sets one of the function's attributes (cuFuncSetAttribute).
func (f Function) SetAttribute(a FuncAttribute, v int) error {
	if !f.Valid() {
		return fmt.Errorf("cuda: set attribute %d of a function that was not looked up", int32(a))
	}
	if r := f.d.c.funcSetAttribute(f.h, a, v); r != Success {
		return f.d.fail(fmt.Sprintf("cuFuncSetAttribute(%s, %d, %d)", f.name, int32(a), v), r)
	}
	return nil
}

// Attribute reads one of the function's attributes (cuFuncGetAttribute).
func (f Function) Attribute(a FuncAttribute) (int, error) {
	if !f.Valid() {
		return 0, fmt.Errorf("cuda: attribute %d of a function that was not looked up", int32(a))
	}
	v, r := f.d.c.funcGetAttribute(f.h, a)
	if r != Success {
		return 0, f.d.fail(fmt.Sprintf("cuFuncGetAttribute(%s, %d)", f.name, int32(a)), r)
	}
	return v, nil
}
