// Package client is respire's public API: a Redis client for production Go services that never
// resends a command whose outcome is unknown and never floods a failing server with
// reconnections. Every type an application uses is defined here; the module's other packages
// are respire's implementation, except netio/resp, whose resp.Value holds raw replies.
//
// Connect connects before returning; Create does no I/O and connects on first use:
//
//	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
//	defer stop()
//	c, err := client.Connect(ctx, client.Options{
//		Endpoints: []client.Endpoint{{Host: "localhost", Port: 6379}},
//		// 100 ms doubling up to 5 s, ±20 %, never giving up (MaxAttempts 0).
//		ReconnectPolicy: &client.ReconnectPolicy{
//			InitialDelay: 100 * time.Millisecond, MaxDelay: 5 * time.Second, JitterRatio: 0.2,
//		},
//	})
//	if err != nil {
//		return err
//	}
//	defer c.Close()
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
// resent: decide retries with the command's idempotency in mind. A policy with MaxAttempts can
// exhaust: the client then fails every command with a *ReconnectLimitError for good, and must be
// closed and created again (see ReconnectPolicy). OnConnectionStateChange observes recovery.
//
// Errors are matched with errors.Is and errors.As: *ServerError (Code, CommandName,
// IsTransient), *TimeoutError (Stage and Diagnostics), *ConnectionError, *ReconnectLimitError
// (a *ConnectionError keeping the last connection error), *UnknownOutcomeError, *ConfigError,
// and the context's error on cancellation before anything was sent.
package client
