package engine

import (
	"context"
	"testing"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
)

// newValidatedRouter returns a router over a primary and one replica, both validated, on a
// manual runtime.
func newValidatedRouter(t *testing.T, policy fsm.ReadFrom) *ReplicaRouter {
	t.Helper()
	r, _, _ := newValidatedRouterWith(t, fsm.RouterConfig{Default: policy})
	return r
}

// newValidatedRouterWith is newValidatedRouter with the rest of cfg (hedging), returning the
// primary's and the replica's harnesses as well.
func newValidatedRouterWith(t *testing.T, cfg fsm.RouterConfig) (*ReplicaRouter, *harness, *harness) {
	t.Helper()
	primary := newHarness(t, Config{Slots: 1})
	replica := newHarness(t, Config{Slots: 1, Endpoint: Endpoint{Host: "127.0.0.2", Port: 6379}})
	cfg.RefreshInterval = time.Second
	cfg.Endpoints = []fsm.Endpoint{fsm.MakeEndpoint("127.0.0.1", 6379), fsm.MakeEndpoint("127.0.0.2", 6379)}
	r, err := NewReplicaRouter(cfg, []*Engine{primary.eng, replica.eng}, newManualRuntime())
	if err != nil {
		t.Fatal(err)
	}
	r.Start()
	t.Cleanup(r.Close)
	for _, h := range []*harness{primary, replica} {
		h.run()
		h.ready()
	}
	answerAll(t, primary, "*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n")
	answerAll(t, replica, "*5\r\n$5\r\nslave\r\n$9\r\n127.0.0.1\r\n:6379\r\n$9\r\nconnected\r\n:0\r\n")
	if !r.Usable(1) {
		t.Fatal("the replica did not validate")
	}
	return r, primary, replica
}

// TestReadRouteSelectsAgainOnlyWhenNothingWasSent: a read whose connection could not be
// acquired (nothing sent) cools its server down and selects another; a read whose bytes may
// have left is never sent again; with every candidate tried, the last acquisition failure is
// the read's error.
func TestReadRouteSelectsAgainOnlyWhenNothingWasSent(t *testing.T) {
	r := newValidatedRouter(t, fsm.ReadReplicaPreferred)
	ctx := context.Background()
	rt := r.Route(fsm.ReadReplicaPreferred, false)
	target, w, err := rt.Select(ctx)
	if err != nil || w != nil || target != 1 {
		t.Fatalf("first selection %d, %v, %v: want the replica, unwatched", target, w, err)
	}
	cmd := &Command{Name: "GET"}
	cmd.Reset()
	cmd.Complete(&AcquireError{Err: errors.New("refused")})
	if !rt.Completed(cmd, false) {
		t.Fatal("an acquisition failure before sending did not select again")
	}
	if r.Usable(1) {
		t.Fatal("the replica whose connection failed is not cooling down")
	}
	if target, _, err = rt.Select(ctx); err != nil || target != 0 {
		t.Fatalf("second selection %d, %v: want the primary", target, err)
	}
	cmd.Reset()
	cmd.Complete(&AcquireError{Err: errors.New("refused again")})
	if !rt.Completed(cmd, false) {
		t.Fatal("the primary's acquisition failure did not select again")
	}
	_, _, err = rt.Select(ctx)
	var ae *AcquireError
	if !errors.As(err, &ae) || ae.Err.Error() != "refused again" || rt.Target() != 0 {
		t.Fatalf("with every candidate tried: %v (target %d), want the primary's acquisition failure", err, rt.Target())
	}

	// A read whose bytes may have reached the replica ends there, and the replica cools down.
	r2 := newValidatedRouter(t, fsm.ReadReplica)
	rt = r2.Route(fsm.ReadReplica, false)
	if target, _, err = rt.Select(ctx); err != nil || target != 1 {
		t.Fatalf("selection %d, %v: want the replica", target, err)
	}
	cmd.Reset()
	cmd.Writing()
	cmd.Complete(errors.New("connection reset"))
	if rt.Completed(cmd, false) {
		t.Fatal("a read that may have been sent selects again")
	}
	if r2.Usable(1) {
		t.Fatal("the replica whose connection failed after the write is not cooling down")
	}
	// A closed client never selects again.
	rt = newValidatedRouter(t, fsm.ReadReplicaPreferred).Route(fsm.ReadReplicaPreferred, false)
	if _, _, err = rt.Select(ctx); err != nil {
		t.Fatal(err)
	}
	cmd.Reset()
	cmd.Complete(&AcquireError{Err: errors.New("closed")})
	if rt.Completed(cmd, true) {
		t.Fatal("a closed client selects again")
	}
}

// sentOn returns the commands sent on h's connections since the last call.
func sentOn(h *harness) []*Command {
	var out []*Command
	for _, c := range h.conns {
		c.mu.Lock()
		out = append(out, c.sent...)
		c.sent = nil
		c.mu.Unlock()
	}
	return out
}

// TestHedgedReadRacesASlowReplica: a watched read to a replica that does not answer within the
// hedge delay is hedged to the primary; the hedge's answer settles it, the caller's command is
// never sent, and the slow attempt is let go.
func TestHedgedReadRacesASlowReplica(t *testing.T) {
	r, primary, replica := newValidatedRouterWith(t, fsm.RouterConfig{Default: fsm.ReadReplicaPreferred,
		HedgeDelay: 10 * time.Millisecond, HedgeLoadPercent: 100})
	mrt := r.rt.(*manualRuntime)
	rt := r.Route(fsm.ReadReplicaPreferred, true)
	target, w, err := rt.Select(context.Background())
	if err != nil || w == nil || target != 1 {
		t.Fatalf("selection %d, %v, %v: want the replica, watched", target, w, err)
	}
	orig := &Command{Name: "GET", Frame: []byte("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n")}
	orig.Reset()
	h := NewHedgedRead(&rt, w, orig)
	h.Start(target)
	slow := sentOn(replica)
	if len(slow) != 1 || string(slow[0].Frame) != string(orig.Frame) || slow[0] == orig {
		t.Fatalf("the replica got %d commands: want one copy of the read", len(slow))
	}
	if h.Step() {
		t.Fatal("settled before any attempt ended")
	}
	mrt.mu.Lock()
	mrt.now += 10 * time.Millisecond
	mrt.mu.Unlock()
	mrt.fireAll()
	select {
	case <-h.Wake():
	default:
		t.Fatal("the hedge decision did not wake the read")
	}
	if h.Step() {
		t.Fatal("settled before any attempt ended")
	}
	hedge := sentOn(primary)
	if len(hedge) != 1 || string(hedge[0].Frame) != string(orig.Frame) {
		t.Fatalf("the primary got %d commands: want the hedge", len(hedge))
	}
	answer(t, hedge[0], "$1\r\nv\r\n")
	<-h.Wake()
	if !h.Step() {
		t.Fatal("the hedge's answer did not settle the read")
	}
	won, at := h.Result()
	if at != 0 || won == nil || won.Err != nil {
		t.Fatalf("settled on %d (%v): want the primary's hedge", at, won)
	}
	if s, _ := won.Reply.AsString(); s != "v" {
		t.Fatalf("reply %q", s)
	}
	h.Release()
	answer(t, slow[0], "$1\r\nv\r\n") // the loser's late answer goes nowhere
	if got := r.Hedges(); got.Eligible != 1 || got.Sent != 1 || got.Won != 1 {
		t.Fatalf("hedge figures %+v: want one watched, sent and won", got)
	}
	if orig.Stage() != StageQueued {
		t.Fatalf("the caller's command reached stage %v: it must never be sent", orig.Stage())
	}
}

func answer(t *testing.T, cmd *Command, reply string) {
	t.Helper()
	if _, err := resp.Parse([]byte(reply), &cmd.Reply, nil); err != nil {
		t.Fatal(err)
	}
	cmd.Complete(nil)
}

// TestReadRouteBeginWithoutWaiting: with every candidate's probe pending, Begin returns at
// once with the selection pending; the probe's answer routes it (Answered, then Finish); a
// pending selection that is cancelled reports the caller's reason, and nothing was routed.
func TestReadRouteBeginWithoutWaiting(t *testing.T) {
	r, primary, replica := newValidatedRouterWith(t, fsm.RouterConfig{Default: fsm.ReadNearest})
	var probes []*Command
	for _, h := range []*harness{primary, replica} {
		for _, c := range sentOn(h) {
			if c.Name == "PING" {
				probes = append(probes, c)
			}
		}
	}
	if len(probes) != 2 {
		t.Fatalf("%d probes sent after validation, want one per candidate", len(probes))
	}
	rt := r.Route(fsm.ReadNearest, false)
	if _, _, err, done := rt.Begin(); done {
		t.Fatalf("Begin decided (%v) with every probe pending", err)
	}
	if rt.Answered() {
		t.Fatal("answered before any probe did")
	}
	answer(t, probes[1], "+PONG\r\n")
	if !rt.Answered() {
		t.Fatal("the probe's answer did not route the pending read")
	}
	if target, w, err := rt.Finish(); err != nil || w != nil || target != 1 {
		t.Fatalf("Finish: %d, %v, %v: want the replica, whose probe answered", target, w, err)
	}

	r2, primary2, replica2 := newValidatedRouterWith(t, fsm.RouterConfig{Default: fsm.ReadNearest})
	sentOn(primary2)
	sentOn(replica2)
	rt = r2.Route(fsm.ReadNearest, false)
	if _, _, _, done := rt.Begin(); done {
		t.Fatal("Begin decided with every probe pending")
	}
	stop := errors.New("caller left")
	if err := rt.Cancel(stop); err != stop {
		t.Fatalf("Cancel: %v, want the caller's reason", err)
	}
	if rt.Answered() {
		t.Fatal("a cancelled selection still reports an answer")
	}
}

// TestReadRouteUnusableSelection: a selection that could not take the read with nothing sent
// (a blocking read's rent or ROLE check failed) cools down, the next selection is another
// candidate, and once none is left the reported failure is the read's error.
func TestReadRouteUnusableSelection(t *testing.T) {
	r := newValidatedRouter(t, fsm.ReadReplicaPreferred)
	ctx := context.Background()
	rt := r.Route(fsm.ReadReplicaPreferred, false)
	if target, _, err := rt.Select(ctx); err != nil || target != 1 {
		t.Fatalf("selection %d, %v: want the replica", target, err)
	}
	rt.Unusable(errors.New("ROLE answered master"))
	if r.Usable(1) {
		t.Fatal("the unusable replica is not cooling down")
	}
	if target, _, err := rt.Select(ctx); err != nil || target != 0 {
		t.Fatalf("selection %d, %v: want the primary", target, err)
	}
	last := errors.New("rent refused")
	rt.Unusable(last)
	if _, _, err := rt.Select(ctx); err != last {
		t.Fatalf("with every candidate tried: %v, want the last failure", err)
	}
}
