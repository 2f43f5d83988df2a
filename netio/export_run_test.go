package netio

// ReplyRuns returns how many times c paired more than one reply under one hold of its flight
// lock (conn_run.go), or zero when c pairs replies one at a time.
func ReplyRuns(c *Conn) uint64 {
	if c.replies == nil {
		return 0
	}
	return c.replies.runs.Load()
}

// PairOneAtATime makes c pair each reply under its own hold of the flight lock, as connections
// with a push handler do, and read 4 KiB at a time (benchmarks of runs against single replies).
// Call it before c carries any command.
func PairOneAtATime(c *Conn) {
	c.replies = nil
	c.rd.SetReadAhead(0)
}
