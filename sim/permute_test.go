package sim

import (
	"slices"
	"testing"
)

// permuteInPlace against a copy gathered by hand: s[i] = old s[pos[i]],
// on a permutation with a fixed point, a 2-cycle and a 3-cycle, for both
// index types; pos is left all −1.
func TestPermuteInPlace(t *testing.T) {
	old := []string{"a", "b", "c", "d", "e", "f"}
	pos := []int{0, 2, 1, 5, 3, 4} // 0 fixed; 1↔2; 3←5←4←3
	want := []string{"a", "c", "b", "f", "d", "e"}
	s := slices.Clone(old)
	p := slices.Clone(pos)
	permuteInPlace(s, p)
	if !slices.Equal(s, want) {
		t.Errorf("int positions: %v, want %v", s, want)
	}
	for _, v := range p {
		if v != -1 {
			t.Fatalf("positions not used up: %v", p)
		}
	}
	s32 := slices.Clone(old)
	p32 := []int32{0, 2, 1, 5, 3, 4}
	permuteInPlace(s32, p32)
	if !slices.Equal(s32, want) {
		t.Errorf("int32 positions: %v, want %v", s32, want)
	}
}
