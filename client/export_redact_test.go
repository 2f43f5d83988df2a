package client

// NewTxForTest returns an empty transaction of c, as DedicatedConn.Exec hands to its callback.
func NewTxForTest(c *Client) *Tx { return &Tx{c: c} }
