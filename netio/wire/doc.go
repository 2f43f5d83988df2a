// Package wire holds respire's protocol decisions that are not system calls: pure code, shared by
// the production runtime (netio, over sockets) and the simulator (sim, over simulated pipes), so
// that both run the same logic. Like fsm it reads no clock, starts no goroutine, opens no socket
// and draws no random number; a test enforces that it imports only fsm, netio/resp and pure parts
// of the standard library, plus a few named types of engine (the command and the seam's
// vocabulary), net (the error types sockets report, to print and classify them), context (its
// cancellation error) and log/slog (the value type of redacted configurations).
//
// The connection protocol:
//
//   - Handshake is the setup of a new connection (HELLO, AUTH, SELECT, CLIENT SETNAME and
//     SETINFO) as a machine: it produces request batches and judges their replies. A rejection is
//     a *HandshakeError whose message never echoes credentials (RedactReply).
//   - The connection errors: *ConnectError for a failed attempt (with its ConnectStage), *IOError
//     for an established connection that failed (ErrClosed when the engine closed it),
//     *LivenessError for an expired liveness bound, *SubscribeError for a refused subscription.
//     Classify says whether a failure may be retried; CauseText prints a cause under a wrapper
//     that names the endpoint already. Failures only sockets produce (TLS) are classified by
//     netio, through ClassifyWith.
//   - AppendSubscriptions encodes the pub/sub episodes' (un)subscription commands.
//
// The Redis Cluster protocol:
//
//   - KeySlot maps a key to its hash slot (CRC16 of the key or of its {hash tag}, modulo 16384),
//     without allocating.
//   - ParseClusterSlots, ParseClusterShards and ParseClusterNodes turn topology replies into
//     fsm.TopologyReply values, which fsm.Topology.Apply folds into a slot map. Malformed replies
//     give a *ReplyError; a reply the server refused (an error reply) gives a
//     *TopologyRejectedError.
//   - ParseRedirect reads MOVED and ASK errors, and ClassifyRejection names the error replies that
//     prove a command was not executed (MOVED, ASK, CLUSTERDOWN, TRYAGAIN, READONLY, MASTERDOWN,
//     LOADING), the ones a client may retry without risk of running a command twice.
//
// Endpoints in replies come in the forms Redis 7 writes them, each resolved here:
//
//   - an IP address or host name: the node's preferred endpoint, put in canonical form (see
//     fsm.CanonicalHost), IPv6 with or without brackets;
//   - a null or empty endpoint (cluster-preferred-endpoint-type unknown-endpoint, or a node that
//     does not know its own address yet): the host the query was sent to, with the reply's port;
//   - "?" (a node told to prefer host names that has none): unknown; topology parsers fall back
//     to the node's announced IP address, and a redirect to "?" cannot be followed without a
//     topology refresh.
package wire
