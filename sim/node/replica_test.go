package node

import (
	"strings"
	"testing"
)

// TestReplicaNodes: a group's data nodes answer what a read router validates a replica with
// (ROLE with the link state, CONFIG GET replica-serve-stale-data, INFO with the zone and the
// link status); a replica whose link is down serves the dataset as it was, or refuses with
// MASTERDOWN when it does not serve stale data; the link coming back brings the writes it
// missed; a promotion brings the link up.
func TestReplicaNodes(t *testing.T) {
	d := newTestDeployment(t)
	r1, r2 := d.nodes["r1"], d.nodes["r2"]
	d.do(t, "r1", "SET", "k", "v1")
	if got := d.do(t, "r2", "GET", "k"); !strings.Contains(got, `"v1"`) {
		t.Fatalf("a replica follows the primary: %s", got)
	}
	if got := d.do(t, "r2", "ROLE"); !strings.Contains(got, `"connected"`) {
		t.Fatalf("replica ROLE with its link up: %s", got)
	}
	if got := d.do(t, "r2", "CONFIG", "GET", "replica-serve-stale-data"); !strings.Contains(got, `"replica-serve-stale-data" "yes"`) {
		t.Fatalf("serve-stale default: %s", got)
	}
	d.g.SetZone(r2, "az-b")
	// The test link shortens long replies: the INFO text is read from the node.
	if got := d.do(t, "r2", "INFO", "SERVER"); !strings.HasPrefix(got, `"# Server`) {
		t.Fatalf("replica INFO reply: %s", got)
	}
	if got := r2.info(); !strings.Contains(got, "availability_zone:az-b\r\n") || !strings.Contains(got, "master_link_status:up\r\n") {
		t.Fatalf("replica INFO: %s", got)
	}
	if got := r1.info(); strings.Contains(got, "availability_zone") || !strings.Contains(got, "role:master") {
		t.Fatalf("primary INFO without a zone: %s", got)
	}

	if !d.g.SetLink(r2, false) || d.g.SetLink(r2, false) || d.g.SetLink(r1, false) || d.g.LinkUp(r2) {
		t.Fatal("SetLink: only a replica's link goes down, once")
	}
	d.do(t, "r1", "SET", "k", "v2")
	if got := d.do(t, "r2", "GET", "k"); !strings.Contains(got, `"v1"`) {
		t.Fatalf("a replica with its link down serves its stale copy: %s", got)
	}
	if got := d.do(t, "r2", "ROLE"); !strings.Contains(got, `"connect"`) {
		t.Fatalf("replica ROLE with its link down: %s", got)
	}
	if got := r2.info(); !strings.Contains(got, "master_link_status:down") {
		t.Fatalf("replica INFO with its link down: %s", got)
	}
	d.g.SetServeStale(r2, false)
	if got := d.do(t, "r2", "GET", "k"); !strings.HasPrefix(got, `error:"MASTERDOWN`) {
		t.Fatalf("no stale data: %s", got)
	}
	if got := d.do(t, "r2", "CONFIG", "GET", "replica-serve-stale-data"); !strings.Contains(got, `"no"`) {
		t.Fatalf("serve-stale off: %s", got)
	}
	if !d.g.SetLink(r2, true) || !d.g.LinkUp(r2) {
		t.Fatal("the link did not come back")
	}
	if got := d.do(t, "r2", "GET", "k"); !strings.Contains(got, `"v2"`) {
		t.Fatalf("the link back brings the missed writes: %s", got)
	}

	d.g.SetLink(r2, false)
	d.g.SetServeStale(r2, true)
	if !d.g.Promote(r2) || !d.g.LinkUp(r2) {
		t.Fatal("a promoted replica's link is up")
	}
	if got := d.do(t, "r2", "SET", "k", "v3"); strings.HasPrefix(got, "error") {
		t.Fatalf("write on the promoted replica: %s", got)
	}
	if got := d.do(t, "r1", "GET", "k"); !strings.Contains(got, `"v3"`) {
		t.Fatalf("the old primary follows the new one: %s", got)
	}
	if got := d.do(t, "s1", "INFO"); strings.Contains(got, "Server") {
		t.Fatalf("a Sentinel answers no data node INFO: %s", got)
	}
}
