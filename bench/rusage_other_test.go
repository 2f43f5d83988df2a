//go:build !unix

package bench

// contextSwitches is not measured on this platform: the ctxsw/op metric reads 0.
func contextSwitches() int64 { return 0 }
