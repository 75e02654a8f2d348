package checkpoint

import (
	"fmt"
	"testing"
)

// BenchmarkDecode is decode of 4 Mi elements (one read's worth of BF16 at
// parallelMinBytes·2) of each float element type into a buffer already
// touched: the conversion alone, per source byte (MB/s).
func BenchmarkDecode(b *testing.B) {
	const n = 4 << 20
	for _, d := range []DType{BF16, F16, F32} {
		b.Run(fmt.Sprintf("dtype=%s", d), func(b *testing.B) {
			src := make([]byte, n*d.Size())
			for i := range src {
				src[i] = byte(i*7 + 3)
			}
			dst := make([]float32, n)
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				decode(dst, src, d)
			}
		})
	}
}
