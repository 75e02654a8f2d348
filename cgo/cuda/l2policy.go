package cuda

import (
	"errors"
	"fmt"
)

// ErrNoL2Policy is returned by the persisting-L2 calls when the driver
// lacks them (cuCtxSetLimit, cuCtxGetLimit, cuStreamSetAttribute,
// cuCtxResetPersistingL2Cache: CUDA 11.0).
var ErrNoL2Policy = errors.New("cuda: the driver has no persisting-L2 controls (cuCtxSetLimit, cuStreamSetAttribute, cuCtxResetPersistingL2Cache)")

// Limit is a CUlimit (cuda.h).
type Limit int32

// LimitPersistingL2CacheSize is the L2 set aside for persisting accesses,
// in bytes (CU_LIMIT_PERSISTING_L2_CACHE_SIZE, 0x06), at most the device's
// AttrMaxPersistingL2CacheSize.
const LimitPersistingL2CacheSize Limit = 0x06

// AccessProperty is a CUaccessProperty (cuda.h).
type AccessProperty int32

const (
	AccessNormal     AccessProperty = 0 // CU_ACCESS_PROPERTY_NORMAL
	AccessStreaming  AccessProperty = 1 // CU_ACCESS_PROPERTY_STREAMING: less likely to persist
	AccessPersisting AccessProperty = 2 // CU_ACCESS_PROPERTY_PERSISTING: more likely to persist
)

// StreamAttrAccessPolicyWindow is CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW
// (= CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, 1).
const StreamAttrAccessPolicyWindow = 1

// AccessPolicyWindow is CUaccessPolicyWindow (cuda.h), field for field and
// laid out as C lays it out (the layout test holds both): accesses to
// [BasePtr, BasePtr+NumBytes) by kernels of the stream get HitProp for a
// HitRatio fraction of the window's lines and MissProp for the rest.
type AccessPolicyWindow struct {
	BasePtr  DevicePtr      // void* base_ptr
	NumBytes uintptr        // size_t num_bytes (at most AttrMaxAccessPolicyWindowSize)
	HitRatio float32        // float hitRatio, in [0, 1]
	HitProp  AccessProperty // CUaccessProperty hitProp
	MissProp AccessProperty // CUaccessProperty missProp: normal or streaming
}

// HasL2Policy says whether the driver has the persisting-L2 controls.
func (d *Driver) HasL2Policy() bool { return d.c.hasL2Policy() }

// SetLimit sets a limit of the current context (cuCtxSetLimit).
func (d *Driver) SetLimit(limit Limit, v int64) error {
	if !d.c.hasL2Policy() {
		return ErrNoL2Policy
	}
	if v < 0 {
		return fmt.Errorf("cuda: cuCtxSetLimit(%#x, %d): a limit is not negative", int32(limit), v)
	}
	if r := d.c.ctxSetLimit(limit, v); r != Success {
		return d.fail(fmt.Sprintf("cuCtxSetLimit(%#x, %d)", int32(limit), v), r)
	}
	return nil
}

// Limit reads a limit of the current context (cuCtxGetLimit).
func (d *Driver) Limit(limit Limit) (int64, error) {
	if !d.c.hasL2Policy() {
		return 0, ErrNoL2Policy
	}
	v, r := d.c.ctxGetLimit(limit)
	if r != Success {
		return 0, d.fail(fmt.Sprintf("cuCtxGetLimit(%#x)", int32(limit)), r)
	}
	return v, nil
}

// ResetPersistingL2 returns every persisting line of the L2 to normal
// (cuCtxResetPersistingL2Cache).
func (d *Driver) ResetPersistingL2() error {
	if !d.c.hasL2Policy() {
		return ErrNoL2Policy
	}
	if r := d.c.ctxResetPersistingL2(); r != Success {
		return d.fail("cuCtxResetPersistingL2Cache", r)
	}
	return nil
}

// SetAccessPolicyWindow sets the stream's access-policy window
// (cuStreamSetAttribute(CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW)); a
// window of zero bytes removes it.
func (s Stream) SetAccessPolicyWindow(w AccessPolicyWindow) error {
	if !s.d.c.hasL2Policy() {
		return ErrNoL2Policy
	}
	if w.HitRatio < 0 || w.HitRatio > 1 {
		return fmt.Errorf("cuda: access-policy window hit ratio %g: must be in [0, 1]", w.HitRatio)
	}
	if w.MissProp == AccessPersisting {
		return errors.New("cuda: access-policy window miss property: must be normal or streaming (cuda.h)")
	}
	if r := s.d.c.streamSetAccessPolicy(s.h, w); r != Success {
		return s.d.fail("cuStreamSetAttribute(ACCESS_POLICY_WINDOW)", r)
	}
	return nil
}
