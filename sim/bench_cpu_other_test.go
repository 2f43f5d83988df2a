//go:build !unix

package sim

import "time"

// processCPU is unavailable on this platform.
func processCPU() (time.Duration, bool) { return 0, false }
