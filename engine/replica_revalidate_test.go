package engine

import (
	"errors"
	"testing"
	"time"

	"github.com/respire-go/respire/fsm"
)

const (
	roleMaster  = "*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n"
	roleReplica = "*5\r\n$5\r\nslave\r\n$9\r\n127.0.0.1\r\n:6379\r\n$9\r\nconnected\r\n:0\r\n"
)

// stalledRouter returns a Replica-policy router (100 ms interval) on a manual runtime whose
// replica was validated at 7 s, and whose clock then jumps to 7.22 s without the wake timer
// firing: a process that stalled past two intervals.
func stalledRouter(t *testing.T) (*ReplicaRouter, *harness, *manualRuntime) {
	t.Helper()
	r, replica, rt := validatedRouter(t, 100*time.Millisecond)
	if !r.Usable(1) {
		t.Fatal("the replica is not usable after its validation")
	}
	rt.mu.Lock()
	rt.now = 7*time.Second + 220*time.Millisecond
	rt.mu.Unlock()
	if r.Usable(1) {
		t.Fatal("the replica's validation is not stale after 2.2 intervals: the test shows nothing")
	}
	return r, replica, rt
}

// TestStalledReplicaReadWaitsForTheRecheck: a Replica read stepped after the replica's
// validation went stale (the process stalled) waits for the re-validation the router sends in
// that step, and goes to the replica once it answers as one. Before the fix it was refused at
// once with no-candidate.
func TestStalledReplicaReadWaitsForTheRecheck(t *testing.T) {
	r, replica, _ := stalledRouter(t)
	p := r.selectBegin(fsm.ReadReplica, false)
	if p.ch == nil {
		t.Fatalf("the read was decided at once (target %d, reason %s), want it to wait for the re-check",
			p.answer.target, p.answer.reason)
	}
	replica.run()
	answerAll(t, replica, roleReplica)
	awaitRecheck(t, &p)
	target, _, err := r.selectEnd(&p)
	if err != nil || target != 1 {
		t.Fatalf("read went to %d (%v), want the revalidated replica 1", target, err)
	}
}

// awaitRecheck waits for the answer of p, a read parked behind a re-check.
func awaitRecheck(t *testing.T, p *pendingSelect) {
	t.Helper()
	select {
	case p.answer = <-p.ch:
	case <-time.After(5 * time.Second):
		t.Fatal("the read was not answered after the re-check")
	}
}

// TestStalledReplicaReadRefusedWhenRecheckSaysMaster: the re-check finds the replica promoted;
// the waiting read is refused (no-candidate), never served on the stale answer.
func TestStalledReplicaReadRefusedWhenRecheckSaysMaster(t *testing.T) {
	r, replica, _ := stalledRouter(t)
	p := r.selectBegin(fsm.ReadReplica, false)
	if p.ch == nil {
		t.Fatalf("the read was decided at once (target %d), want it to wait for the re-check", p.answer.target)
	}
	replica.run()
	answerAll(t, replica, roleMaster)
	awaitRecheck(t, &p)
	_, _, err := r.selectEnd(&p)
	var refusal *ReadRefusal
	if !errors.As(err, &refusal) || refusal.Reason != fsm.NoCandidate {
		t.Fatalf("err %v, want a no-candidate refusal", err)
	}
}

// TestStalledReplicaReadWaitIsBounded: an unanswered re-check refuses the waiting read when the
// router's wake timer fires ProbeDeadline after it was sent.
func TestStalledReplicaReadWaitIsBounded(t *testing.T) {
	r, _, rt := stalledRouter(t)
	p := r.selectBegin(fsm.ReadReplica, false)
	if p.ch == nil {
		t.Fatalf("the read was decided at once (target %d), want it to wait for the re-check", p.answer.target)
	}
	rt.mu.Lock()
	rt.now += fsm.ProbeDeadline
	rt.mu.Unlock()
	rt.fireAll()
	select {
	case p.answer = <-p.ch:
	default:
		t.Fatal("the read still waits after ProbeDeadline")
	}
	_, _, err := r.selectEnd(&p)
	var refusal *ReadRefusal
	if !errors.As(err, &refusal) || refusal.Reason != fsm.NoCandidate {
		t.Fatalf("err %v, want a no-candidate refusal", err)
	}
}
