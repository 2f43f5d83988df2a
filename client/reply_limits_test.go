package client_test

import (
	"errors"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
)

func TestReplyLimitsValidation(t *testing.T) {
	base := func(l client.ReplyLimits) client.Options {
		return client.Options{Endpoints: []client.Endpoint{{Host: "127.0.0.1", Port: 6379}}, ReplyLimits: l}
	}
	good := []client.ReplyLimits{
		{},
		{MaxBulkLen: client.MinBulkLen, MaxElements: client.MinElements, MaxDepth: client.MinDepth, MaxReplyLen: client.MinReplyLen},
		{MaxReplyLen: client.MaxReplyLenCeiling, MaxBulkLen: client.MaxReplyLenCeiling, MaxElements: client.MaxReplyLenCeiling, MaxDepth: client.MaxDepthCeiling},
		{MaxBulkLen: client.DefaultMaxReplyLen},
	}
	for _, l := range good {
		o := base(l)
		if err := o.Validate(); err != nil {
			t.Errorf("%+v: %v", l, err)
		}
	}
	bad := []struct {
		limits client.ReplyLimits
		option string
		reason string
	}{
		{client.ReplyLimits{MaxBulkLen: -1}, "ReplyLimits.MaxBulkLen", "negative"},
		{client.ReplyLimits{MaxElements: -1}, "ReplyLimits.MaxElements", "negative"},
		{client.ReplyLimits{MaxDepth: -1}, "ReplyLimits.MaxDepth", "negative"},
		{client.ReplyLimits{MaxReplyLen: -1}, "ReplyLimits.MaxReplyLen", "negative"},
		{client.ReplyLimits{MaxBulkLen: client.MinBulkLen - 1}, "ReplyLimits.MaxBulkLen", "at least"},
		{client.ReplyLimits{MaxElements: client.MinElements - 1}, "ReplyLimits.MaxElements", "at least"},
		{client.ReplyLimits{MaxDepth: client.MinDepth - 1}, "ReplyLimits.MaxDepth", "at least"},
		{client.ReplyLimits{MaxReplyLen: client.MinReplyLen - 1}, "ReplyLimits.MaxReplyLen", "at least"},
		{client.ReplyLimits{MaxReplyLen: client.MaxReplyLenCeiling + 1}, "ReplyLimits.MaxReplyLen", "at most"},
		{client.ReplyLimits{MaxDepth: client.MaxDepthCeiling + 1}, "ReplyLimits.MaxDepth", "at most"},
		{client.ReplyLimits{MaxBulkLen: client.DefaultMaxReplyLen + 1}, "ReplyLimits.MaxBulkLen", "MaxReplyLen"},
		{client.ReplyLimits{MaxReplyLen: 1 << 20, MaxBulkLen: 1<<20 + 1}, "ReplyLimits.MaxBulkLen", "MaxReplyLen"},
		{client.ReplyLimits{MaxReplyLen: 1 << 20, MaxElements: 1<<20 + 1}, "ReplyLimits.MaxElements", "MaxReplyLen"},
	}
	for _, tc := range bad {
		o := base(tc.limits)
		err := o.Validate()
		var ce *client.ConfigError
		if !errors.As(err, &ce) || ce.Option != tc.option || !strings.Contains(ce.Reason, tc.reason) {
			t.Errorf("%+v: got %v, want a ConfigError on %s mentioning %q", tc.limits, err, tc.option, tc.reason)
		}
	}
}

// TestReplyOverLimitFailsConnection reads, against a real server, replies that break each reply
// limit: each fails its connection with a *ProtocolError naming the limit, the command's outcome
// is unknown, and the client goes on with a new connection. The bulk string over MaxBulkLen is
// refused at its header: the client allocates far less than its 8 MiB payload.
func TestReplyOverLimitFailsConnection(t *testing.T) {
	redistest.Require(t)
	checkNoLeaks(t)
	srv := redistest.Start(t, redistest.Config{})
	ctx := ctxT(t)
	setup, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}})
	if err != nil {
		t.Fatal(err)
	}
	defer setup.Close()
	must(t, setup.Set(ctx, "big", strings.Repeat("b", 8<<20)))
	must(t, setup.Set(ctx, "medium", strings.Repeat("m", 16<<10)))
	for i := range 100 {
		if _, err := setup.Do(ctx, "RPUSH", "list", strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		limit  string
		limits client.ReplyLimits
		args   []any
	}{
		{"MaxBulkLen", client.ReplyLimits{MaxBulkLen: 64 << 10}, []any{"GET", "big"}},
		{"MaxReplyLen", client.ReplyLimits{MaxReplyLen: 8 << 10}, []any{"GET", "medium"}},
		{"MaxElements", client.ReplyLimits{MaxElements: 64}, []any{"LRANGE", "list", "0", "-1"}},
		{"MaxDepth", client.ReplyLimits{MaxDepth: 4}, []any{"EVAL", "return {{{{{1}}}}}", "0"}},
	}
	for _, tc := range cases {
		t.Run(tc.limit, func(t *testing.T) {
			c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}, ReplyLimits: tc.limits})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err = c.Do(ctx, tc.args...)
			runtime.ReadMemStats(&after)
			var pe *client.ProtocolError
			if !errors.As(err, &pe) || pe.Limit != tc.limit || !errors.Is(err, client.ErrProtocol) {
				t.Fatalf("got %v, want a ProtocolError naming %s", err, tc.limit)
			}
			if !errors.Is(err, client.ErrUnknownOutcome) {
				t.Fatalf("a written command whose reply was refused must have an unknown outcome: %v", err)
			}
			if tc.limit == "MaxBulkLen" {
				if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
					t.Fatalf("allocated %d B for a refused 8 MiB bulk string", got)
				}
			}
			// The connection was replaced; the client goes on.
			eventually(t, "ping after the refused reply", 5*time.Second, func() bool { return c.Ping(ctx) == nil })
		})
	}
}
