package engine

import "github.com/respire-go/respire/fsm"

// AcquireError reports that the engine could not give a command a connection: the machine's
// outcome (failed, exhausted, closed, overflow) and the last connection error, if any. The command
// was never sent. The client maps it to its public error types.
type AcquireError struct {
	// Outcome is the machine's answer.
	Outcome fsm.Outcome
	// Err is the last connection error behind a failed or exhausted outcome.
	Err error
}

// Error implements error.
func (e *AcquireError) Error() string {
	msg := "respire: no connection: " + e.Outcome.String()
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the last connection error.
func (e *AcquireError) Unwrap() error { return e.Err }
