package record

// Arena hands out small slices carved from larger blocks, so that the per-operation and per-step
// records of a run (step effects, reply data, written values) cost one allocation per block
// instead of one per record. Each slice is capped at its length: appending to it never writes
// into a neighbour. Blocks are never reused; they live as long as the Result that refers to them.
//
// Blocks grow: the first holds firstBlock elements (or Size, when smaller), and each next one
// twice its predecessor, up to Size. A short run (a sweep runs thousands) then allocates what it
// uses rather than a whole block of Size, and a long one reaches blocks of Size after a few.
type Arena[T any] struct {
	block []T
	// next is the capacity of the next block, once a first one was made.
	next int
	// Size is the largest capacity of a block (a larger request gets a block of its own size).
	Size int
}

// firstBlock is the capacity of an arena's first block.
const firstBlock = 16

// Take returns a zeroed slice of n elements (nil for n == 0).
func (a *Arena[T]) Take(n int) []T {
	if n == 0 {
		return nil
	}
	if n > cap(a.block)-len(a.block) {
		if a.next == 0 {
			a.next = min(firstBlock, a.Size)
		}
		a.block = make([]T, 0, max(a.next, n))
		a.next = min(a.next*2, max(a.Size, 1))
	}
	start := len(a.block)
	a.block = a.block[:start+n]
	return a.block[start : start+n : start+n]
}

// CopyOf returns a copy of src carved from the arena (nil when src is empty).
func (a *Arena[T]) CopyOf(src []T) []T {
	dst := a.Take(len(src))
	copy(dst, src)
	return dst
}
