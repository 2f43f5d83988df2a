package record

import "testing"

// TestArenaBlocksGrow: an arena's blocks start small and double up to Size, so that a short run
// allocates what it uses; a request larger than a block gets a block of its own; slices are
// capped at their length.
func TestArenaBlocksGrow(t *testing.T) {
	a := Arena[int]{Size: 100}
	var caps []int
	last := -1
	for range 400 {
		s := a.Take(1)
		if cap(s) != 1 {
			t.Fatalf("slice capacity %d, want 1", cap(s))
		}
		if c := cap(a.block); c != last {
			caps = append(caps, c)
			last = c
		}
	}
	want := []int{16, 32, 64, 100}
	if len(caps) < len(want) {
		t.Fatalf("block capacities %v, want %v then 100", caps, want)
	}
	for i, c := range want {
		if caps[i] != c {
			t.Fatalf("block capacities %v, want %v then 100", caps, want)
		}
	}
	for _, c := range caps[len(want):] {
		if c != 100 {
			t.Fatalf("block capacities %v: a block above Size", caps)
		}
	}
	if s := a.Take(500); len(s) != 500 || cap(a.block) != 500 {
		t.Fatalf("a large request: len %d, block %d", len(s), cap(a.block))
	}
	small := Arena[int]{Size: 4}
	small.Take(1)
	if cap(small.block) != 4 {
		t.Fatalf("first block of an arena of Size 4: %d", cap(small.block))
	}
	if (&Arena[int]{Size: 8}).Take(0) != nil {
		t.Fatal("Take(0) must be nil")
	}
}
