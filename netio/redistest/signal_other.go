//go:build !unix

package redistest

import (
	"errors"
	"os"
)

var errNoJobControl = errors.New("redistest: pausing processes needs a unix platform")

func stopProcess(*os.Process) error   { return errNoJobControl }
func resumeProcess(*os.Process) error { return errNoJobControl }
