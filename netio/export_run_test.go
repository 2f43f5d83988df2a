package netio

// ReplyRuns returns how many times c paired more than one reply under one hold of its flight
// lock (conn_run.go), or zero when c pairs replies one at a time.
func ReplyRuns(c *Conn) uint64 {
	if c.replies == nil {
		return 0
	}
	return c.replies.runs.Load()
}
