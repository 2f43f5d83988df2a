package client

import "github.com/respire-go/respire/fsm"

// SubscriptionEndReason says why a subscription ended (Subscription.Ended,
// SubscriptionEndedError.Reason).
type SubscriptionEndReason uint8

// Subscription end reasons. The zero value is no reason: the subscription has not ended.
const (
	// EndUnsubscribed: the application unsubscribed (Unsubscribe or Close).
	EndUnsubscribed SubscriptionEndReason = iota + 1
	// EndClosed: the client was closed.
	EndClosed
	// EndReconnectExhausted: pub/sub recovery reached the reconnect policy's limit.
	EndReconnectExhausted
	// EndRejected: the server refused the subscription (for example an ACL denial).
	EndRejected
)

// String returns "unsubscribed", "closed", "reconnect-exhausted" or "rejected" ("none" for the
// zero value).
func (r SubscriptionEndReason) String() string { return fsm.EndReason(r).String() }
