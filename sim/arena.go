package sim

// arena hands out small slices carved from larger blocks, so that the per-operation and per-step
// records of a run (step effects, reply data, written values) cost one allocation per block
// instead of one per record. Each slice is capped at its length: appending to it never writes
// into a neighbour. Blocks are never reused; they live as long as the Result that refers to them.
type arena[T any] struct {
	block []T
	// size is the capacity of a new block (a larger request gets a block of its own size).
	size int
}

// take returns a zeroed slice of n elements (nil for n == 0).
func (a *arena[T]) take(n int) []T {
	if n == 0 {
		return nil
	}
	if n > cap(a.block)-len(a.block) {
		a.block = make([]T, 0, max(a.size, n))
	}
	start := len(a.block)
	a.block = a.block[:start+n]
	return a.block[start : start+n : start+n]
}

// copyOf returns a copy of src carved from the arena (nil when src is empty).
func (a *arena[T]) copyOf(src []T) []T {
	dst := a.take(len(src))
	copy(dst, src)
	return dst
}
