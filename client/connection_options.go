package client

import (
	"context"
	"log/slog"
	"sync"
)

// credentialsHook adapts Options.Credentials to the transport's per-attempt hook, or returns nil.
func (o *Options) credentialsHook() func(ctx context.Context) (string, string, error) {
	p := o.Credentials
	if p == nil {
		return nil
	}
	return func(ctx context.Context) (string, string, error) {
		c, err := p.Credentials(ctx)
		return c.Username, c.Password, err
	}
}

// multipathFallbackEventID is the spec's number of the MultipathTcpFallback event.
const multipathFallbackEventID = 143

// multipathFallbackLog returns the transport's MultipathFallback hook: it logs the Information
// event MultipathTcpFallback once per client (each client derives its transport configuration
// once), or nil when there is nothing to log.
func (o *Options) multipathFallbackLog() func() {
	l := o.Logger
	if !o.EnableMultipathTCP || l == nil {
		return nil
	}
	var once sync.Once
	ep := ""
	if len(o.Endpoints) > 0 {
		ep = o.Endpoints[0].String()
	}
	return func() {
		once.Do(func() {
			l.Info("respire: Multipath TCP is not available; connecting with ordinary TCP",
				"event", "MultipathTcpFallback", "event_id", multipathFallbackEventID, "endpoint", ep)
		})
	}
}

// connectionRecycledEventID is the spec's number of the ConnectionRecycled event.
const connectionRecycledEventID = 142

// logRecycle logs a lifetime-recycling observation: a published replacement at Information level
// (the spec's ConnectionRecycled event), a failed replacement, which leaves the old connection in
// use, as a warning with its retry delay.
func logRecycle(l *slog.Logger, ch ConnectionStateChange, attrs []any) {
	if ch.Recycle == RecycleRetrying {
		l.Warn("respire: connection lifetime replacement failed; the old connection stays in use",
			append(attrs, "event", "ConnectionRecycleRetry", "retry_delay", ch.NextDelay, "error", errString(ch.Err))...)
		return
	}
	l.Info("respire: connection recycled after its maximum lifetime",
		append(attrs, "event", "ConnectionRecycled", "event_id", connectionRecycledEventID, "close_reason", "max_lifetime")...)
}
