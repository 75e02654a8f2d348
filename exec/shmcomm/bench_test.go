package shmcomm

import (
	"fmt"
	"testing"
)

// BenchmarkLinkPingPong is one round trip of a message between two
// goroutines through a Link (send, the peer polls it and sends it back):
// the floor of an exchange over shared memory, without a communicator's
// channels and counters. SetBytes counts the payload both ways.
func BenchmarkLinkPingPong(b *testing.B) {
	for _, n := range []int{512, 4 << 10, 64 << 10} {
		b.Run(fmt.Sprintf("bytes=%d", n), func(b *testing.B) {
			a, z, err := NewLinkPair(benchRingBytes)
			if err != nil {
				b.Fatal(err)
			}
			msg := make([]float32, n/4)
			recv := func(l *Link) []byte {
				var got []byte
				w := Waiter{Spin: &l.Spin}
				for got == nil {
					progress, err := l.Poll(1<<30, func(_ uint64, m []byte) { got = m })
					if err != nil {
						panic(err)
					}
					if progress {
						w.Reset()
					} else if got == nil {
						l.WaitData(&w)
					}
				}
				return got
			}
			send := func(l *Link) {
				if !l.TrySend(0, msg) {
					if err := l.SendFrame(Encode(0, msg), func() error { return nil }); err != nil {
						panic(err)
					}
				}
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				for i := 0; i < b.N; i++ {
					recv(z)
					send(z)
				}
			}()
			b.SetBytes(int64(2 * n))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				send(a)
				recv(a)
			}
			<-done
		})
	}
}

// benchRingBytes is exec/tcpcomm's default ring (256 KiB).
const benchRingBytes = 256 << 10
