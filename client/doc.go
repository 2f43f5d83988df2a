// Package client is respire's public API: a Redis client for production Go services whose
// connection recovery is written as pure, deterministic state machines (package fsm), driven by
// an event loop (package engine) over real sockets (package netio).
//
// Connect connects before returning; Create does no I/O and connects on first use:
//
//	c, err := client.Connect(ctx, client.Options{
//		Endpoints: []client.Endpoint{{Host: "localhost", Port: 6379}},
//		ReconnectPolicy: &client.ReconnectPolicy{
//			InitialDelay: 250 * time.Millisecond, MaxDelay: 5 * time.Second,
//			JitterRatio: 0.2, MaxAttempts: 10,
//		},
//	})
//
// Every Redis command has a typed method on Commands, which Client and DedicatedConn embed
// (c.Get, c.HGetAll, c.ZRangeWithScores, c.XReadGroup, ...): arguments are Go values, and
// replies are decoded into the same Go types under RESP2 and RESP3. A Batch queues the same
// methods and runs them in one round trip (Commands.Pipeline) or as one MULTI/EXEC transaction
// on the shared connections (Commands.Atomic). Do sends raw commands; resp.Value's As methods
// read their replies. See docs/commands.md.
//
// Failed connections are replaced on demand under the ReconnectPolicy. A command whose bytes may
// have reached the server and whose reply is lost fails with ErrUnknownOutcome and is never
// resent: decide retries with the command's idempotency in mind.
//
// Errors are matched with errors.Is and errors.As: *ServerError (Code, CommandName,
// IsTransient), *TimeoutError (Stage and Diagnostics), *ConnectionError, *ReconnectLimitError
// (a *ConnectionError keeping the last connection error), *UnknownOutcomeError, *ConfigError,
// and the context's error on cancellation before anything was sent.
package client
