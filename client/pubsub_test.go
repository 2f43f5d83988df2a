package client_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
)

// psNext reads the subscription's next item within a bound.
func psNext(t *testing.T, sub *client.Subscription, within time.Duration) (client.Message, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	return sub.Next(ctx)
}

// psMustNext reads the next item and fails the test on an error.
func psMustNext(t *testing.T, sub *client.Subscription) client.Message {
	t.Helper()
	m, err := psNext(t, sub, 10*time.Second)
	if err != nil {
		t.Fatalf("Next: %v", err)
	}
	return m
}

// pubsubEvents returns the pub/sub lifecycle observations of the log.
func (l *stateLog) pubsubEvents() []client.ConnectionStateChange {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []client.ConnectionStateChange
	for _, c := range l.all {
		if c.Source == client.SourcePubSub {
			out = append(out, c)
		}
	}
	return out
}

func TestPubSubOverBothProtocols(t *testing.T) {
	redistest.Require(t)
	srv := redistest.Start(t, redistest.Config{})
	for _, proto := range []client.Protocol{client.ProtocolRESP2, client.ProtocolRESP3} {
		t.Run(proto.String(), func(t *testing.T) {
			checkNoLeaks(t)
			ctx := ctxT(t)
			c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, Protocol: proto})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			p := proto.String() + "."
			sub, err := c.Subscribe(ctx, p+"news", p+"sports", p+"news")
			must(t, err)
			if got := strings.Join(sub.Topics(), ","); got != p+"news,"+p+"sports" {
				t.Fatalf("topics %s", got)
			}
			psub, err := c.PSubscribe(ctx, p+"ev.*")
			must(t, err)
			ssub, err := c.SSubscribe(ctx, p+"s1")
			must(t, err)
			// The same channel in two subscriptions: both receive it.
			dup, err := c.Subscribe(ctx, p+"news")
			must(t, err)
			// One server-side subscription serves both: Redis counts one receiver.
			if n, err := c.Publish(ctx, p+"news", "hello"); err != nil || n != 1 {
				t.Fatalf("PUBLISH: %d %v", n, err)
			}
			if n, err := c.Publish(ctx, p+"ev.login", "alice"); err != nil || n != 1 {
				t.Fatalf("PUBLISH pattern: %d %v", n, err)
			}
			if n, err := c.SPublish(ctx, p+"s1", "sharded"); err != nil || n != 1 {
				t.Fatalf("SPUBLISH: %d %v", n, err)
			}
			if m := psMustNext(t, sub); m.Kind != client.MessagePublished || m.Channel != p+"news" || m.Payload != "hello" || m.Pattern != "" {
				t.Fatalf("message %+v", m)
			}
			if m := psMustNext(t, dup); m.Payload != "hello" {
				t.Fatalf("second subscription %+v", m)
			}
			if m := psMustNext(t, psub); m.Channel != p+"ev.login" || m.Pattern != p+"ev.*" || m.Payload != "alice" {
				t.Fatalf("pattern message %+v", m)
			}
			if m := psMustNext(t, ssub); m.Channel != p+"s1" || m.Payload != "sharded" {
				t.Fatalf("shard message %+v", m)
			}
			// Unsubscribing one of two subscriptions of a channel keeps it for the other.
			must(t, dup.Close())
			if _, err := psNext(t, dup, time.Second); !errors.Is(err, client.ErrSubscriptionEnded) {
				t.Fatalf("closed subscription: %v", err)
			}
			var ended *client.SubscriptionEndedError
			if _, err := psNext(t, dup, time.Second); !errors.As(err, &ended) || ended.Reason != client.EndUnsubscribed {
				t.Fatalf("end reason: %v", err)
			}
			if n, err := c.Publish(ctx, p+"news", "again"); err != nil || n != 1 {
				t.Fatalf("PUBLISH after one unsubscription: %d %v", n, err)
			}
			if m := psMustNext(t, sub); m.Payload != "again" {
				t.Fatalf("message %+v", m)
			}
			// Partial unsubscription.
			must(t, sub.Unsubscribe(p+"news"))
			eventually(t, "news unsubscribed", 5*time.Second, func() bool {
				n, err := c.Publish(ctx, p+"news", "x")
				return err == nil && n == 0
			})
			if n, err := c.Publish(ctx, p+"sports", "goal"); err != nil || n != 1 {
				t.Fatalf("PUBLISH sports: %d %v", n, err)
			}
			if m := psMustNext(t, sub); m.Channel != p+"sports" || m.Payload != "goal" {
				t.Fatalf("message %+v", m)
			}
			// Subscription commands never go through Do.
			if _, err := c.Do(ctx, "SUBSCRIBE", "x"); err == nil {
				t.Fatal("Do SUBSCRIBE accepted")
			}
			if _, err := c.Subscribe(ctx); err == nil {
				t.Fatal("Subscribe without channels accepted")
			}
			if _, err := c.Subscribe(ctx, ""); err == nil {
				t.Fatal("Subscribe of an empty name accepted")
			}
		})
	}
}

func TestSSubscribeOnStandaloneRedis70(t *testing.T) {
	redistest.Require(t)
	checkNoLeaks(t)
	srv := redistest.Start(t, redistest.Config{})
	if v := srv.Do(t, "INFO", "server"); !strings.Contains(v, "redis_version:7.") {
		t.Fatalf("want Redis 7, got %q", v)
	}
	ctx := ctxT(t)
	c, err := client.Create(client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}})
	must(t, err)
	defer c.Close()
	sub, err := c.SSubscribe(ctx, "orders{1}", "orders{2}")
	must(t, err)
	if got := srv.Do(t, "PUBSUB", "SHARDNUMSUB", "orders{1}", "orders{2}"); got == "" {
		t.Fatal("PUBSUB SHARDNUMSUB")
	}
	for i := 0; i < 3; i++ {
		if n, err := c.SPublish(ctx, "orders{"+strconv.Itoa(1+i%2)+"}", "o"+strconv.Itoa(i)); err != nil || n != 1 {
			t.Fatalf("SPUBLISH: %d %v", n, err)
		}
	}
	for i := 0; i < 3; i++ {
		m := psMustNext(t, sub)
		if m.Kind != client.MessagePublished || m.Payload != "o"+strconv.Itoa(i) || m.Channel != "orders{"+strconv.Itoa(1+i%2)+"}" {
			t.Fatalf("shard message %d: %+v", i, m)
		}
	}
	must(t, sub.Close())
	eventually(t, "shard channels unsubscribed", 5*time.Second, func() bool {
		n, err := c.SPublish(ctx, "orders{1}", "late")
		return err == nil && n == 0
	})
}

// TestPubSubRecoversAfterKillWithGap: kill -9 and restart the server; the subscriptions are
// restored and each delivers a gap marker before the first message received afterwards.
func TestPubSubRecoversAfterKillWithGap(t *testing.T) {
	redistest.Require(t)
	for _, tc := range []struct {
		name   string
		policy *client.ReconnectPolicy
	}{{"no-policy", nil}, {"policy", &client.ReconnectPolicy{InitialDelay: 50 * time.Millisecond, MaxDelay: 200 * time.Millisecond}}} {
		t.Run(tc.name, func(t *testing.T) {
			checkNoLeaks(t)
			srv := redistest.Start(t, redistest.Config{})
			log := &stateLog{}
			ctx := ctxT(t)
			c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, ReconnectPolicy: tc.policy,
				OnConnectionStateChange: log.add, ConnectTimeout: time.Second, CommandTimeout: time.Second})
			must(t, err)
			defer c.Close()
			sub, err := c.Subscribe(ctx, "news")
			must(t, err)
			psub, err := c.PSubscribe(ctx, "ev.*")
			must(t, err)
			ssub, err := c.SSubscribe(ctx, "s1")
			must(t, err)
			_, err = c.Publish(ctx, "news", "before")
			must(t, err)
			if m := psMustNext(t, sub); m.Payload != "before" {
				t.Fatalf("before the kill: %+v", m)
			}
			srv.Kill()
			eventually(t, "pub/sub disconnected", 5*time.Second, func() bool {
				return len(log.pubsubEvents()) > 0
			})
			srv.Restart(t)
			// Publish until each subscription receives a message again.
			publish := func(name string, f func(context.Context, string, string) (int64, error), channel string, sub *client.Subscription) {
				var first client.Message
				gaps := 0
				eventually(t, name+" flows again", 15*time.Second, func() bool {
					_, _ = f(ctx, channel, "after")
					m, err := psNext(t, sub, 100*time.Millisecond)
					if err != nil {
						return false
					}
					if m.Kind == client.MessageGap {
						gaps++
						return false
					}
					first = m
					return true
				})
				if gaps != 1 || first.Kind != client.MessagePublished || first.Payload != "after" {
					t.Fatalf("%s: %d gap markers then %+v; want one gap marker before the first message", name, gaps, first)
				}
			}
			publish("channel", c.Publish, "news", sub)
			publish("pattern", c.Publish, "ev.x", psub)
			publish("shard", c.SPublish, "s1", ssub)
			// Each episode reported its recovery: source PubSub, no slot.
			connected := 0
			for _, e := range log.pubsubEvents() {
				if e.Slot != -1 {
					t.Fatalf("pub/sub event with a slot: %+v", e)
				}
				if e.SourceState == client.SourceConnected {
					connected++
				}
			}
			if connected < 4 { // two initial connections, two recoveries
				t.Fatalf("%d connected pub/sub events", connected)
			}
			if tc.policy == nil {
				for _, e := range log.pubsubEvents() {
					if e.Scheduled && (e.Attempt != 0 || e.NextDelay < 250*time.Millisecond || e.NextDelay > 5*time.Second) {
						t.Fatalf("no-policy schedule %+v", e)
					}
				}
			}
		})
	}
}

// TestPubSubExhaustionWhileServerStaysDown: with a policy, recovery exhausts: the subscriptions
// drain what they buffered and end with ReconnectExhausted, new subscriptions fail with the
// reconnect limit, and commands work again once the server is back.
func TestPubSubExhaustionWhileServerStaysDown(t *testing.T) {
	redistest.Require(t)
	checkNoLeaks(t)
	srv := redistest.Start(t, redistest.Config{})
	log := &stateLog{}
	ctx := ctxT(t)
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)},
		ReconnectPolicy:         &client.ReconnectPolicy{InitialDelay: 20 * time.Millisecond, MaxAttempts: 2},
		OnConnectionStateChange: log.add, ConnectTimeout: time.Second, CommandTimeout: time.Second})
	must(t, err)
	defer c.Close()
	sub, err := c.Subscribe(ctx, "news")
	must(t, err)
	ssub, err := c.SSubscribe(ctx, "s1")
	must(t, err)
	_, err = c.Publish(ctx, "news", "buffered")
	must(t, err)
	eventually(t, "message buffered", 5*time.Second, func() bool { return sub.Buffered() == 1 })
	srv.Kill()
	// Already buffered items drain first, then the end.
	if m := psMustNext(t, sub); m.Payload != "buffered" {
		t.Fatalf("buffered message %+v", m)
	}
	for _, s := range []*client.Subscription{sub, ssub} {
		_, err := psNext(t, s, 10*time.Second)
		var ended *client.SubscriptionEndedError
		if !errors.As(err, &ended) || ended.Reason != client.EndReconnectExhausted || !errors.Is(err, client.ErrReconnectLimit) {
			t.Fatalf("want the end with ReconnectExhausted, got %v", err)
		}
		var ce *client.ConnectionError
		if !errors.As(ended.Err, &ce) {
			t.Fatalf("end without the final connection error: %v", ended.Err)
		}
		if ok, reason := s.Ended(); !ok || reason != client.EndReconnectExhausted {
			t.Fatal("Ended")
		}
		// A new iteration on an ended subscription yields only the end.
		for _, err := range s.All(ctx) {
			if !errors.Is(err, client.ErrSubscriptionEnded) {
				t.Fatalf("iteration on an ended subscription: %v", err)
			}
		}
	}
	eventually(t, "exhaustion events", 5*time.Second, func() bool {
		n := 0
		for _, e := range log.pubsubEvents() {
			if e.Exhausted && e.SourceState == client.SourceDisconnected && e.Err != nil && e.Attempt == 2 && e.Slot == -1 {
				n++
			}
		}
		return n == 2
	})
	for _, f := range []func(context.Context, ...string) (*client.Subscription, error){c.Subscribe, c.SSubscribe, c.PSubscribe} {
		_, err := f(ctx, "later")
		var rl *client.ReconnectLimitError
		var ce *client.ConnectionError
		if !errors.As(err, &rl) || !errors.As(err, &ce) || !errors.Is(err, client.ErrReconnectLimit) {
			t.Fatalf("subscription after exhaustion: %v", err)
		}
	}
	srv.Restart(t)
	eventually(t, "commands after the restart", 10*time.Second, func() bool {
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		return c.Ping(pctx) == nil
	})
	if _, err := c.Subscribe(ctx, "later"); !errors.Is(err, client.ErrReconnectLimit) {
		t.Fatalf("exhaustion must stay until the client is recreated: %v", err)
	}
}

// TestPubSubExhaustionOfOneKindLeavesTheOther: shard channels lose their permission; the sharded
// episode's resubscriptions are refused until it exhausts, while channels keep working.
func TestPubSubExhaustionOfOneKindLeavesTheOther(t *testing.T) {
	redistest.Require(t)
	checkNoLeaks(t)
	srv := redistest.Start(t, redistest.Config{Extra: []string{"user limited on >pw ~* +@all allchannels"}})
	ctx := ctxT(t)
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, Username: "limited", Password: "pw",
		ReconnectPolicy: &client.ReconnectPolicy{InitialDelay: 20 * time.Millisecond, MaxAttempts: 2},
		ConnectTimeout:  time.Second, CommandTimeout: time.Second})
	must(t, err)
	defer c.Close()
	sub, err := c.Subscribe(ctx, "news")
	must(t, err)
	ssub, err := c.SSubscribe(ctx, "s1")
	must(t, err)
	// Revoke the shard channel; Redis disconnects the client subscribed to it.
	srv.Do(t, "ACL", "SETUSER", "limited", "resetchannels", "&news")
	_, err = psNext(t, ssub, 10*time.Second)
	var ended *client.SubscriptionEndedError
	if !errors.As(err, &ended) || ended.Reason != client.EndReconnectExhausted {
		t.Fatalf("sharded subscription: %v", err)
	}
	var se *client.ServerError
	if !errors.As(ended.Err, &se) || se.Code != "NOPERM" {
		t.Fatalf("the final error is the refused resubscription: %v", ended.Err)
	}
	if _, err := c.SSubscribe(ctx, "s2"); !errors.Is(err, client.ErrReconnectLimit) {
		t.Fatalf("sharded subscription after exhaustion: %v", err)
	}
	// Regular pub/sub is untouched.
	if n, err := c.Publish(ctx, "news", "still"); err != nil || n != 1 {
		t.Fatalf("PUBLISH: %d %v", n, err)
	}
	if m := psMustNext(t, sub); m.Payload != "still" {
		t.Fatalf("regular subscription %+v", m)
	}
	more, err := c.Subscribe(ctx, "news")
	must(t, err)
	must(t, more.Close())
}

// TestPubSubInitialSubscriptionIsASingleAttempt: a first subscription to a dead server fails
// after one dial and nothing retries it; a later subscription makes its own attempt.
func TestPubSubInitialSubscriptionIsASingleAttempt(t *testing.T) {
	redistest.Require(t)
	checkNoLeaks(t)
	srv := redistest.Start(t, redistest.Config{})
	srv.Kill()
	var dials atomic.Int64
	ctx := ctxT(t)
	c, err := client.Create(client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, Dialer: countingDialer(&dials),
		ReconnectPolicy: &client.ReconnectPolicy{InitialDelay: 10 * time.Millisecond, MaxAttempts: 5}})
	must(t, err)
	defer c.Close()
	_, err = c.Subscribe(ctx, "news")
	var ce *client.ConnectionError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("want a connection error, got %v", err)
	}
	time.Sleep(200 * time.Millisecond)
	if n := dials.Load(); n != 1 {
		t.Fatalf("%d dials for one initial subscription", n)
	}
	srv.Restart(t)
	sub, err := c.Subscribe(ctx, "news")
	must(t, err)
	must(t, sub.Close())
	if n := dials.Load(); n != 2 {
		t.Fatalf("%d dials, want 2", n)
	}
	// The caller's context bounds the initial attempt.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.PSubscribe(cctx, "p.*"); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled subscription: %v", err)
	}
}

// TestPubSubDuringRecovery: while recovery waits for its delay, a new subscription fails with a
// connection error without dialing, and unsubscribing is allowed: recovery restores only the
// remaining subscriptions.
func TestPubSubDuringRecovery(t *testing.T) {
	redistest.Require(t)
	checkNoLeaks(t)
	srv := redistest.Start(t, redistest.Config{})
	var dials atomic.Int64
	log := &stateLog{}
	ctx := ctxT(t)
	c, err := client.Create(client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, Dialer: countingDialer(&dials),
		OnConnectionStateChange: log.add, ConnectTimeout: time.Second,
		ReconnectPolicy: &client.ReconnectPolicy{InitialDelay: 700 * time.Millisecond}})
	must(t, err)
	defer c.Close()
	keep, err := c.Subscribe(ctx, "keep")
	must(t, err)
	drop, err := c.Subscribe(ctx, "drop")
	must(t, err)
	if n := srv.Do(t, "CLIENT", "KILL", "TYPE", "pubsub"); n != "1" {
		t.Fatalf("killed %s pub/sub clients", n)
	}
	eventually(t, "recovery scheduled", 5*time.Second, func() bool {
		for _, e := range log.pubsubEvents() {
			if e.Scheduled && e.Attempt == 1 && e.NextDelay == 700*time.Millisecond {
				return true
			}
		}
		return false
	})
	before := dials.Load()
	_, err = c.Subscribe(ctx, "late")
	var ce *client.ConnectionError
	if !errors.As(err, &ce) || errors.Is(err, client.ErrReconnectLimit) {
		t.Fatalf("subscription during recovery: %v", err)
	}
	if dials.Load() != before {
		t.Fatal("a subscription during recovery opened a connection")
	}
	must(t, drop.Close())
	if _, err := psNext(t, drop, time.Second); !errors.Is(err, client.ErrSubscriptionEnded) {
		t.Fatalf("unsubscribed during backoff: %v", err)
	}
	eventually(t, "recovered", 5*time.Second, func() bool {
		for _, e := range log.pubsubEvents() {
			if e.SourceState == client.SourceConnected && e.Attempt == 1 {
				return true
			}
		}
		return false
	})
	if got := srv.Do(t, "PUBSUB", "CHANNELS"); got != "keep" {
		t.Fatalf("server-side channels after recovery: %q, want only keep", got)
	}
	if n := srv.Do(t, "PUBLISH", "drop", "x"); n != "0" {
		t.Fatalf("the removed subscription was restored: %s receivers", n)
	}
	srv.Do(t, "PUBLISH", "keep", "k")
	if m := psMustNext(t, keep); m.Kind != client.MessageGap || m.Channel != "keep" {
		t.Fatalf("want the gap marker first, got %+v", m)
	}
	if m := psMustNext(t, keep); m.Payload != "k" {
		t.Fatalf("message %+v", m)
	}
	late, err := c.Subscribe(ctx, "late")
	must(t, err)
	must(t, late.Close())
}

// TestPubSubCloseDuringBackoff: Close cancels the recovery's delay, ends the subscriptions with
// EndClosed and leaves no goroutine behind.
func TestPubSubCloseDuringBackoff(t *testing.T) {
	redistest.Require(t)
	checkNoLeaks(t)
	srv := redistest.Start(t, redistest.Config{})
	log := &stateLog{}
	ctx := ctxT(t)
	c, err := client.Create(client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, OnConnectionStateChange: log.add,
		ReconnectPolicy: &client.ReconnectPolicy{InitialDelay: time.Minute}})
	must(t, err)
	sub, err := c.Subscribe(ctx, "news")
	must(t, err)
	srv.Kill()
	eventually(t, "recovery scheduled", 5*time.Second, func() bool {
		for _, e := range log.pubsubEvents() {
			if e.Scheduled {
				return true
			}
		}
		return false
	})
	start := time.Now()
	must(t, c.Close())
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Close took %v", d)
	}
	var ended *client.SubscriptionEndedError
	if _, err := psNext(t, sub, time.Second); !errors.As(err, &ended) || ended.Reason != client.EndClosed {
		t.Fatalf("after Close: %v", err)
	}
	if _, err := c.Subscribe(ctx, "x"); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("Subscribe after Close: %v", err)
	}
}

// TestPubSubOverflowMarker: a consumer that falls behind loses the oldest entries, counted in an
// overflow marker delivered in their place; the reader never blocks.
func TestPubSubOverflowMarker(t *testing.T) {
	redistest.Require(t)
	checkNoLeaks(t)
	srv := redistest.Start(t, redistest.Config{})
	ctx := ctxT(t)
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, SubscriptionBuffer: 4})
	must(t, err)
	defer c.Close()
	sub, err := c.Subscribe(ctx, "flood")
	must(t, err)
	marker, err := c.Subscribe(ctx, "marker")
	must(t, err)
	for i := 0; i < 10; i++ {
		_, err := c.Publish(ctx, "flood", "m"+strconv.Itoa(i))
		must(t, err)
	}
	// Messages arrive in order on the one connection: once the marker is in, the flood is too.
	_, err = c.Publish(ctx, "marker", "done")
	must(t, err)
	if m := psMustNext(t, marker); m.Payload != "done" {
		t.Fatalf("marker %+v", m)
	}
	if n := sub.Buffered(); n != 5 {
		t.Fatalf("%d entries buffered, want 4 and the overflow count", n)
	}
	if m := psMustNext(t, sub); m.Kind != client.MessageOverflow || m.Dropped != 6 {
		t.Fatalf("want an overflow marker for 6 entries, got %+v", m)
	}
	for i := 6; i < 10; i++ {
		if m := psMustNext(t, sub); m.Payload != "m"+strconv.Itoa(i) {
			t.Fatalf("message %d: %+v", i, m)
		}
	}
	// Next honours its context.
	if _, err := psNext(t, sub, 20*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Next without messages: %v", err)
	}
	if _, err := client.Create(client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, SubscriptionBuffer: -1}); err == nil {
		t.Fatal("negative SubscriptionBuffer accepted")
	}
	// The iterator stops when the loop breaks.
	n := 0
	_, _ = c.Publish(ctx, "flood", "a")
	_, _ = c.Publish(ctx, "flood", "b")
	for m, err := range sub.All(ctx) {
		must(t, err)
		if m.Payload != "a" {
			t.Fatalf("iterator %+v", m)
		}
		n++
		break
	}
	if m := psMustNext(t, sub); n != 1 || m.Payload != "b" {
		t.Fatalf("after the loop: %+v", m)
	}
}

// TestPubSubCloseFromStateHandler: lifecycle events are delivered outside the recovery, so a
// handler may close the client synchronously when pub/sub recovery starts.
func TestPubSubCloseFromStateHandler(t *testing.T) {
	redistest.Require(t)
	checkNoLeaks(t)
	srv := redistest.Start(t, redistest.Config{})
	closed := make(chan struct{})
	var c *client.Client
	var once sync.Once
	ctx := ctxT(t)
	c, err := client.Create(client.Options{Endpoints: []client.Endpoint{endpointOf(srv)},
		ReconnectPolicy: &client.ReconnectPolicy{InitialDelay: time.Second},
		OnConnectionStateChange: func(ch client.ConnectionStateChange) {
			if ch.Source == client.SourcePubSub && ch.SourceState == client.SourceDisconnected {
				once.Do(func() { c.Close(); close(closed) })
			}
		}})
	must(t, err)
	sub, err := c.Subscribe(ctx, "news")
	must(t, err)
	srv.Do(t, "CLIENT", "KILL", "TYPE", "pubsub")
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("handler could not close the client")
	}
	var ended *client.SubscriptionEndedError
	if _, err := psNext(t, sub, time.Second); !errors.As(err, &ended) || ended.Reason != client.EndClosed {
		t.Fatalf("after Close: %v", err)
	}
}
