// Package config is respire's one configuration path: it turns the options a user writes into
// the engine's configuration and the connection settings a runtime needs.
//
// Two front ends use it. client.Options copies its recovery and connection fields into an
// Options value and calls Validate and Resolve; a simulator scenario's client section (package
// sim) does the same with the fields it reads from YAML, which carry the same names in
// snake_case. So both have the same defaults, the same bounds, and the same error, naming the
// same field with the same reason, for the same bad value.
//
// Resolve returns a Resolved value:
//   - Options: the input with every default filled in, in the form a user writes them
//     (NoTimeout and NoIdleReuse stay as they are), so that printing them shows what is in effect
//     and resolving them again changes nothing;
//   - Engine: the engine.Config for the multiplexer, the dedicated pool and the pub/sub
//     episodes (the caller adds the endpoint, the journal size and the episode base);
//   - Handshake: what each new connection sends before it is ready;
//   - IdleReadTimeout and WriteStallTimeout: the liveness bounds after the write bound's
//     inheritance, zero meaning off.
//
// The replica-read options (ReadFrom, ReplicaEndpoints, the latency tolerance, the refresh
// interval, the client's zone and hedged reads) have their own value, Replicas, resolved by
// ResolveReplicas into the read router's configuration (fsm.RouterConfig) by both front ends.
//
// The package is pure: no I/O, no clock, no goroutines. It imports engine and fsm only, so the
// simulator can use it without importing any socket code.
package config
