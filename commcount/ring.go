package commcount

// Ring all-reduce bookkeeping. The TCP communicator runs exactly this ring;
// the NCCL binding records its calls as this ring ("ring-equivalent"
// messages, since NCCL's own choice of algorithm is not observable); the
// Program derives its expected counts from it. One definition, three users.
//
// A buffer of count elements is split into n chunks; chunk i holds
// ChunkLen(count, n, i) elements starting at ChunkStart(count, n, i). In
// reduce-scatter step s (0 ≤ s < n−1) the member at position p sends chunk
// (p−s) mod n to position p+1; in all-gather step s it sends chunk (p+1−s) mod n.

// ChunkLen is the number of elements in chunk i of a count-element buffer split n ways.
func ChunkLen(count, n, i int) int {
	l := count / n
	if i < count%n {
		l++
	}
	return l
}

// ChunkStart is the index of chunk i's first element.
func ChunkStart(count, n, i int) int {
	s := i * (count / n)
	if r := count % n; i < r {
		s += i
	} else {
		s += r
	}
	return s
}

func mod(a, n int) int { return ((a % n) + n) % n }

// RingReduceScatterChunk is the chunk position p sends in reduce-scatter step s.
func RingReduceScatterChunk(n, p, s int) int { return mod(p-s, n) }

// RingAllGatherChunk is the chunk position p sends in all-gather step s.
func RingAllGatherChunk(n, p, s int) int { return mod(p+1-s, n) }

// RingAllReduceWire returns the messages and wire bytes that the member at
// position p of an n-member ring sends to its successor for an all-reduce of
// count elements of elemBytes each. Messages: 2(n−1) for n > 1 (zero-length
// chunks are still one message each, as the ring sends them).
func RingAllReduceWire(n, p, count, elemBytes int) (messages, wireBytes int64) {
	if n <= 1 {
		return 0, 0
	}
	for s := 0; s < n-1; s++ {
		wireBytes += int64(ChunkLen(count, n, RingReduceScatterChunk(n, p, s)) * elemBytes)
		wireBytes += int64(ChunkLen(count, n, RingAllGatherChunk(n, p, s)) * elemBytes)
	}
	return int64(2 * (n - 1)), wireBytes
}

// RingAllGatherWire is the same for an all-gather where every member
// contributes count elements: n−1 messages of count elements each.
func RingAllGatherWire(n, count, elemBytes int) (messages, wireBytes int64) {
	if n <= 1 {
		return 0, 0
	}
	return int64(n - 1), int64((n - 1) * count * elemBytes)
}
