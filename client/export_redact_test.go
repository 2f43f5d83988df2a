package client

// NewTxForTest returns an empty transaction, as DedicatedConn.Exec hands to its callback.
func NewTxForTest(*Client) *Tx { return &Tx{} }

// SettledFutureForTest returns a future that holds value, as a batch leaves it.
func SettledFutureForTest(value string) *Future[string] {
	return &Future[string]{val: value}
}
