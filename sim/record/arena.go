package record

// Arena hands out small slices carved from larger blocks, so that the per-operation and per-step
// records of a run (step effects, reply data, written values) cost one allocation per block
// instead of one per record. Each slice is capped at its length: appending to it never writes
// into a neighbour. Blocks are never reused; they live as long as the Result that refers to them.
type Arena[T any] struct {
	block []T
	// Size is the capacity of a new block (a larger request gets a block of its own size).
	Size int
}

// Take returns a zeroed slice of n elements (nil for n == 0).
func (a *Arena[T]) Take(n int) []T {
	if n == 0 {
		return nil
	}
	if n > cap(a.block)-len(a.block) {
		a.block = make([]T, 0, max(a.Size, n))
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
