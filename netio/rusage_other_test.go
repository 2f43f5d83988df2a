//go:build !unix

package netio_test

import "time"

// processCPU is unknown on this platform: benchmarks report zero.
func processCPU() time.Duration { return 0 }
