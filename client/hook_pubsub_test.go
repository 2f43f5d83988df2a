package client_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
)

// TestHookDelivery: a delivery hook wraps Subscription.Next: it sees the kind and size of what
// came but not the channel or payload, it cannot take a second message (ErrHookReplay: the
// message stays for the next call), and a message it took reaches the application even when the
// hook returns an error.
func TestHookDelivery(t *testing.T) {
	var seen []string
	var misbehave atomic.Bool
	var second error
	c, _ := hookClient(t, client.Hook{Delivery: func(next client.DeliveryFunc) client.DeliveryFunc {
		return func(ctx context.Context, d *client.DeliveryInfo) error {
			err := next(ctx, d)
			ch, pat := d.Channel()
			seen = append(seen, fmt.Sprintf("%v:%v:%d:%q:%q", d.Taken(), d.Kind(), d.PayloadLen(), ch, pat))
			if s := fmt.Sprint(d) + fmt.Sprintf("%#v", d); strings.Contains(s, "deliverymark") {
				t.Errorf("printing a DeliveryInfo shows the channel or payload: %s", s)
			}
			if misbehave.Load() {
				second = next(ctx, d)
				return errors.New("hook failure")
			}
			return err
		}
	}})
	ctx := ctxT(t)
	sub, err := c.Subscribe(ctx, "deliverymark:ch")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for _, p := range []string{"deliverymark-1", "deliverymark-22"} {
		if _, err := c.Publish(ctx, "deliverymark:ch", p); err != nil {
			t.Fatal(err)
		}
	}
	m, err := sub.Next(ctx)
	if err != nil || m.Payload != "deliverymark-1" {
		t.Fatalf("first Next: %+v, %v", m, err)
	}
	misbehave.Store(true)
	m, err = sub.Next(ctx)
	if err != nil || m.Payload != "deliverymark-22" {
		t.Fatalf("Next through a failing hook: %+v, %v; the message must reach the application", m, err)
	}
	if !errors.Is(second, client.ErrHookReplay) {
		t.Fatalf("a second next in one delivery: %v, want ErrHookReplay", second)
	}
	misbehave.Store(false)
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := sub.Next(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Next with nothing published: %v", err)
	}
	want := `true:published:14:"":"" true:published:15:"":"" false:none:0:"":""`
	if got := strings.Join(seen, " "); got != want {
		t.Errorf("hook saw %s, want %s", got, want)
	}
}

// TestHookDeliveryObserveArguments: with ObserveArguments the hook sees the channel.
func TestHookDeliveryObserveArguments(t *testing.T) {
	redistest.Require(t)
	srv := redistest.Start(t, redistest.Config{})
	var channel atomic.Value
	ctx := ctxT(t)
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, ObserveArguments: true,
		Hooks: []client.Hook{{Delivery: func(next client.DeliveryFunc) client.DeliveryFunc {
			return func(ctx context.Context, d *client.DeliveryInfo) error {
				err := next(ctx, d)
				ch, _ := d.Channel()
				channel.Store(ch)
				return err
			}
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sub, err := c.Subscribe(ctx, "observed:ch")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if _, err := c.Publish(ctx, "observed:ch", "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := sub.Next(ctx); err != nil {
		t.Fatal(err)
	}
	if got := channel.Load(); got != "observed:ch" {
		t.Errorf("channel %v, want observed:ch", got)
	}
}
