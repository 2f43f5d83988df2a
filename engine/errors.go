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

// ConfigError reports a Config that the machines refuse (Config.Validate): Field names the
// Config field ("Slots", "Pool.MaximumIdle", "Policy"), Reason says what is wrong, and Err is the
// underlying error, if any (the *fsm.PolicyError of an invalid policy).
type ConfigError struct {
	// Field names the offending Config field.
	Field string
	// Reason says what is wrong with it.
	Reason string
	// Err is the underlying error, or nil.
	Err error
}

// Error implements error.
func (e *ConfigError) Error() string {
	return "respire: invalid engine configuration: " + e.Field + " " + e.Reason
}

// Unwrap returns the underlying error.
func (e *ConfigError) Unwrap() error { return e.Err }
