package client

import (
	"context"
	"strconv"
	"strings"

	"github.com/cockroachdb/errors"
)

// ConnectAny connects to the first reachable of several independent deployments, tried in
// priority order at startup. Each candidate keeps its full options (credentials, TLS, timeouts,
// policy): ConnectAny calls Connect with each in turn and returns the first client that
// connects. Failed candidates are closed before the next is tried.
//
// Every candidate is validated before anything is dialed; an invalid one fails the call with a
// *ConfigError whose Option is prefixed with its index ("candidates[1].Database"). When every
// candidate fails, the error is a *ConnectionError with a zero Endpoint whose message lists each
// attempted endpoint with its failure, and whose cause joins the attempts' errors in order, so
// that errors.Is and errors.As reach each of them. When ctx ends first, ConnectAny returns the
// context's error and tries no further candidate.
//
// The returned client stays on its deployment: it never switches to another candidate.
func ConnectAny(ctx context.Context, candidates ...Options) (*Client, error) {
	if len(candidates) == 0 {
		return nil, configErr("candidates", "ConnectAny needs at least one candidate")
	}
	for i := range candidates {
		if err := candidates[i].Validate(); err != nil {
			var ce *ConfigError
			if errors.As(err, &ce) {
				return nil, configErr("candidates["+strconv.Itoa(i)+"]."+ce.Option, ce.Reason)
			}
			return nil, err
		}
	}
	failures := &attemptsError{}
	for i := range candidates {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		c, err := Connect(ctx, candidates[i])
		if err == nil {
			return c, nil
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		failures.attempts = append(failures.attempts, attempt{endpoints: candidates[i].Endpoints, err: err})
	}
	return nil, &ConnectionError{Err: failures}
}

// attempt is one failed ConnectAny candidate.
type attempt struct {
	endpoints []Endpoint
	err       error
}

// attemptsError joins the failures of every ConnectAny candidate.
type attemptsError struct {
	attempts []attempt
}

// Error lists each attempted endpoint with its failure.
func (e *attemptsError) Error() string {
	var b strings.Builder
	b.WriteString("all ")
	b.WriteString(strconv.Itoa(len(e.attempts)))
	b.WriteString(" candidates failed")
	for i, a := range e.attempts {
		b.WriteString("; [")
		b.WriteString(strconv.Itoa(i))
		b.WriteString("] ")
		for j, ep := range a.endpoints {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(ep.String())
		}
		b.WriteString(": ")
		b.WriteString(strings.TrimPrefix(a.err.Error(), "respire: "))
	}
	return b.String()
}

// Unwrap returns each attempt's error, for errors.Is and errors.As.
func (e *attemptsError) Unwrap() []error {
	out := make([]error, len(e.attempts))
	for i, a := range e.attempts {
		out[i] = a.err
	}
	return out
}
