//go:build !unix

package bench

import "time"

// contextSwitches is not measured on this platform: the ctxsw/op metric reads 0.
func contextSwitches() int64 { return 0 }

// cpuTime is not measured on this platform: the cpu-µs/op metric reads 0.
func cpuTime() time.Duration { return 0 }
