package sim

// permuteInPlace puts old element pos[i] at position i for every i
// (s[i] = old s[pos[i]]), following each cycle of the permutation with one
// element held aside; pos is used up (every entry left −1).
func permuteInPlace[T any, I ~int | ~int32](s []T, pos []I) {
	for i := range pos {
		if pos[i] < 0 {
			continue
		}
		held, j := s[i], i
		for {
			k := int(pos[j])
			pos[j] = -1
			if k == i {
				s[j] = held
				break
			}
			s[j] = s[k]
			j = k
		}
	}
}
