package client_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
)

// TestSentinelReadOnlyInScriptRetires: a script or function that fails with READONLY (it wrote
// on a primary that was demoted) retires the Sentinel generation like READONLY elsewhere, through
// every way a script's reply comes back: EVAL, EVALSHA, FCALL, the Script helper, a pipelined
// batch, and an element of EXEC's reply. The next operation rediscovers the primary (a new
// SENTINEL MASTER query), and the script is not run again. Without the rule (noteReadOnly), no
// rediscovery follows and each case fails.
func TestSentinelReadOnlyInScriptRetires(t *testing.T) {
	script := client.NewScript("return redis.call('SET', KEYS[1], ARGV[1])")
	cases := []struct {
		name string
		run  func(ctx context.Context, c *client.Client) error
	}{
		{"eval", func(ctx context.Context, c *client.Client) error {
			_, err := c.Eval(ctx, "return redis.call('SET', KEYS[1], ARGV[1])", []string{"k"}, "v")
			return err
		}},
		{"evalsha", func(ctx context.Context, c *client.Client) error {
			_, err := c.EvalSHA(ctx, script.SHA1(), []string{"k"}, "v")
			return err
		}},
		{"fcall", func(ctx context.Context, c *client.Client) error {
			_, err := c.FCall(ctx, "setter", []string{"k"}, "v")
			return err
		}},
		{"script", func(ctx context.Context, c *client.Client) error {
			_, err := c.RunScript(ctx, script, []string{"k"}, "v")
			return err
		}},
		{"pipeline", func(ctx context.Context, c *client.Client) error {
			var b client.Batch
			f := b.RunScript(script, []string{"k"}, "v")
			if err := c.Pipeline(ctx, &b); err == nil {
				return errors.New("the pipeline reported no failure")
			}
			_, err := f.Result()
			return err
		}},
		{"exec", func(ctx context.Context, c *client.Client) error {
			var b client.Batch
			f := b.FCall("setter", []string{"k"}, "v")
			if err := c.Atomic(ctx, &b); err == nil {
				return errors.New("the transaction reported no failure")
			}
			_, err := f.Result()
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := startROFake(t)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{{Host: "127.0.0.1", Port: f.port()}},
				SentinelPrimaryName: "mymaster", Protocol: client.ProtocolRESP2})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Do(ctx, "GET", "k"); err != nil {
				t.Fatal(err)
			}
			before := f.masterQueries()
			if before == 0 {
				t.Fatal("discovery did not ask SENTINEL MASTER")
			}
			err = tc.run(ctx, c)
			var se *client.ServerError
			if !errors.As(err, &se) || !strings.HasPrefix(se.Message, "READONLY") {
				t.Fatalf("the script: %v, want a ServerError with READONLY", err)
			}
			// The generation retired: the next command waits for a new resolution.
			deadline := time.Now().Add(10 * time.Second)
			for f.masterQueries() == before {
				if time.Now().After(deadline) {
					t.Fatal("READONLY from the script did not retire the generation: no rediscovery")
				}
				if _, err := c.Do(ctx, "GET", "k"); err != nil {
					t.Logf("GET after READONLY: %v", err)
				}
				time.Sleep(20 * time.Millisecond)
			}
			if n := f.scriptRuns(); n != 1 {
				t.Fatalf("the script reached the server %d times, want once: it must not be resent", n)
			}
		})
	}
}
