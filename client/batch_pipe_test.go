package client_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/client"
	"github.com/respire-go/respire/netio/redistest"
)

// Tests of a Client's pipelined batch sent as one command (engine.Multi, batch_pipe.go).

// TestPipelineCancelledAfterManyReplies: the context ends after the server answered 70 of a
// 100-command pipeline (and stalls): the 70 entries whose replies arrived, over many reads, keep
// them (the replies the caller sees when it leaves, Multi.Arrived), each of the 30 others reports
// an unknown outcome wrapping the context's error, and no command reached the server twice.
func TestPipelineCancelledAfterManyReplies(t *testing.T) {
	const n, answered = 100, 70
	f := startDropFake(t, answered)
	f.stall = true
	ctx := ctxT(t)
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{f.endpoint()}, Protocol: client.ProtocolRESP2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var b client.Batch
	fs := make([]*client.Future[int64], n)
	for i := range fs {
		fs[i] = b.Incr(fmt.Sprintf("m%d", i))
	}
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	err = c.Pipeline(cctx, &b)
	if !errors.Is(err, client.ErrUnknownOutcome) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Pipeline: %v, want the first unknown outcome, from the deadline", err)
	}
	for i, fu := range fs {
		v, err := fu.Result()
		var uo *client.UnknownOutcomeError
		switch {
		case i < answered && (err != nil || v != 1):
			t.Fatalf("answered entry %d: %d %v", i, v, err)
		case i >= answered && (!errors.As(err, &uo) || uo.CommandName != "INCR" || !errors.Is(err, context.DeadlineExceeded)):
			t.Fatalf("pending entry %d: %v, want its own unknown outcome", i, err)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range n {
		if got := f.seen[fmt.Sprintf("m%d", i)]; got != 1 {
			t.Errorf("m%d reached the server %d times", i, got)
		}
	}
}

// TestPipelineStringsOutliveTheirPipeline: the short strings a pipeline's GETs return are views
// of its reply arena; they stay unchanged when the same Batch runs again, when the client's
// pooled pipeline carries other batches, and when the server's values change meanwhile.
func TestPipelineStringsOutliveTheirPipeline(t *testing.T) {
	redistest.Require(t)
	srv := redistest.Start(t, redistest.Config{})
	ctx := ctxT(t)
	c, err := client.Connect(ctx, client.Options{Endpoints: []client.Endpoint{endpointOf(srv)}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const keys = 120 // short values filling more than one 8 KiB arena block
	value := func(round, i int) string {
		return fmt.Sprintf("r%02d-%03d-%s", round, i, strings.Repeat(string(rune('a'+(round+i)%26)), 60+i%100))
	}
	set := func(round int) {
		t.Helper()
		var b client.Batch
		for i := range keys {
			b.Set(fmt.Sprintf("arena:%d", i), value(round, i))
		}
		if err := c.Pipeline(ctx, &b); err != nil {
			t.Fatal(err)
		}
	}
	var kept [][]string
	var b client.Batch
	for round := range 6 {
		set(round)
		fs := make([]*client.Future[client.OptionalString], keys)
		for i := range fs {
			fs[i] = b.Get(fmt.Sprintf("arena:%d", i))
		}
		if err := c.Pipeline(ctx, &b); err != nil { // the same Batch each round
			t.Fatal(err)
		}
		got := make([]string, keys)
		for i, fu := range fs {
			v, err := fu.Result()
			if err != nil || !v.Valid || v.Value != value(round, i) {
				t.Fatalf("round %d GET %d: %q %v", round, i, v.Value, err)
			}
			got[i] = v.Value
		}
		kept = append(kept, got)
		for r, strs := range kept {
			for i, s := range strs {
				if s != value(r, i) {
					t.Fatalf("after round %d, a string of round %d changed: %q, want %q", round, r, s, value(r, i))
				}
			}
		}
	}
}

// TestPipelineOnClusterClient: a Cluster client's pipeline (of one hash slot, as a Cluster
// client requires) goes as a group of commands, not as one command (a Cluster engine refuses
// engine.Multi), and each entry gets its own reply.
func TestPipelineOnClusterClient(t *testing.T) {
	redistest.Require(t)
	rc := redistest.StartCluster(t, redistest.ClusterConfig{})
	c := connectCluster(t, rc, client.Options{})
	ctx := ctxT(t)
	const n = 60
	var b client.Batch
	for i := range n {
		b.Set(fmt.Sprintf("{pipe}:%d", i), fmt.Sprintf("v%d", i))
	}
	incrs := make([]*client.Future[int64], n)
	gets := make([]*client.Future[client.OptionalString], n)
	for i := range n {
		incrs[i] = b.Incr(fmt.Sprintf("{pipe}:n:%d", i))
		gets[i] = b.Get(fmt.Sprintf("{pipe}:%d", i))
	}
	if err := c.Pipeline(ctx, &b); err != nil {
		t.Fatalf("Pipeline on a Cluster client: %v", err)
	}
	for i := range n {
		if v, err := incrs[i].Result(); err != nil || v != 1 {
			t.Fatalf("INCR %d: %d %v", i, v, err)
		}
		if v, err := gets[i].Result(); err != nil || v.Value != fmt.Sprintf("v%d", i) {
			t.Fatalf("GET %d: %q %v", i, v.Value, err)
		}
	}
}
