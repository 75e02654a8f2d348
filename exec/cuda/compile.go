package cuda

import (
	"errors"
	"fmt"
	"sync"

	"github.com/partbench/partbench/cgo/cuda"
)

// images caches compiled kernels per element type, architecture and
// compiler, so the ranks of one process (exec.Check runs them all) compile
// once.
var images = struct {
	sync.Mutex
	m map[string]compiledImage
}{m: map[string]compiledImage{}}

type compiledImage struct {
	image []byte
	what  string // "cubin sm_90" or "ptx compute_90"
}

// initKernels compiles kernelSource for the device with NVRTC, loads it and
// looks up every kernel. It prefers a cubin for the device's exact
// architecture (sm_XY: no JIT, so it loads on any driver of the same
// major version) and falls back to PTX for compute_XY, which the driver
// compiles and which needs a driver at least as new as NVRTC.
func (c *Compute) initKernels() error {
	var err error
	if c.rtc, err = loadNVRTC(); err != nil {
		return fmt.Errorf("no NVRTC: %w", err)
	}
	major, minor := c.info.ComputeMajor, c.info.ComputeMinor
	var tries []bool // cubin?
	if c.rtc.HasCUBIN() {
		tries = append(tries, true)
	}
	tries = append(tries, false)
	var errs []error
	for _, cubin := range tries {
		img, err := c.compile(major, minor, cubin)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		m, err := c.drv.LoadModule(img.image)
		if err != nil {
			errs = append(errs, fmt.Errorf("loading the %s kernels: %w", img.what, err))
			continue
		}
		c.module, c.loaded, c.image = m, true, img.what
		break
	}
	if !c.loaded {
		return errors.Join(errs...)
	}
	c.k = map[string]kernel{}
	for _, name := range kernelNames {
		f, err := c.module.Function(name)
		if err != nil {
			return err
		}
		c.k[name] = kernel{fn: f, sig: kernelSigs[name]}
	}
	return nil
}

func (c *Compute) compile(major, minor int, cubin bool) (compiledImage, error) {
	arch := cuda.ArchOption(major, minor, cubin)
	key := c.dt.name + " " + arch + " " + c.rtc.Path()
	images.Lock()
	defer images.Unlock()
	if img, ok := images.m[key]; ok {
		return img, nil
	}
	out, err := c.rtc.Compile(kernelSource(), "partbench_kernels.cu", arch, c.dt.define)
	if err != nil {
		return compiledImage{}, err
	}
	what := fmt.Sprintf("ptx compute_%d%d", major, minor)
	if out.CUBIN {
		what = fmt.Sprintf("cubin sm_%d%d", major, minor)
	}
	img := compiledImage{image: out.Image, what: what}
	images.m[key] = img
	return img, nil
}
