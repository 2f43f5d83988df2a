package scenario

import (
	"errors"
	"strings"
	"testing"
)

// TestMonitorExpectErrors: expect.monitors is refused, naming the field, without a sentinel
// topology, for an unknown Sentinel, a backwards window, bad bounds, or nothing to expect.
func TestMonitorExpectErrors(t *testing.T) {
	const sentinel = "name: x\nduration: 10s\ntopology: {kind: sentinel, nodes: [{id: r1}, {id: s1}], sentinel: {primary: r1, sentinels: [s1]}}\n"
	cases := []struct{ name, yaml, field, msg string }{
		{"standalone", "name: x\nduration: 10s\nexpect: {monitors: [{sentinel: s1, dials: {min: 1}}]}\n", "expect.monitors", "sentinel topology"},
		{"unknown sentinel", sentinel + "expect: {monitors: [{sentinel: r1, dials: {min: 1}}]}\n", "expect.monitors[0].sentinel", "not one of"},
		{"backwards window", sentinel + "expect: {monitors: [{sentinel: s1, during: 2s..2s, dials: {min: 1}}]}\n", "expect.monitors[0].during", "to after from"},
		{"bad bounds", sentinel + "expect: {monitors: [{sentinel: s1, resumed: {min: 2, max: 1}}]}\n", "expect.monitors[0].resumed.max", "below min"},
		{"nothing", sentinel + "expect: {monitors: [{sentinel: s1}]}\n", "expect.monitors[0]", "needs dials"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.yaml))
			var se *Error
			if !errors.As(err, &se) || se.Field != c.field || !strings.Contains(se.Msg, c.msg) {
				t.Fatalf("want an error on %s containing %q, got %v", c.field, c.msg, err)
			}
		})
	}
	sc, err := Parse([]byte(sentinel + "expect: {monitors: [{sentinel: s1, during: 1s..2s, subscribed: {min: 1}}]}\n"))
	if err != nil || len(sc.Expect.Monitors) != 1 || sc.Expect.Monitors[0].During.Max.String() != "2s" {
		t.Fatalf("a valid entry: %+v %v", sc, err)
	}
}

// TestLeadingViewNeedsAfter: a leading Sentinel's view update needs a positive after (its
// switch ends the failover), and the field is read.
func TestLeadingViewNeedsAfter(t *testing.T) {
	const head = "name: x\nduration: 10s\ntopology: {kind: sentinel, nodes: [{id: r1}, {id: r2}, {id: s1}], sentinel: {primary: r1, replicas: [r2], sentinels: [s1]}}\n"
	_, err := Parse([]byte(head + "faults: [{at: 1s, sentinel: {failover: {promote: r2, views: [{sentinel: s1, leads: true}]}}}]\n"))
	var se *Error
	if !errors.As(err, &se) || !strings.HasSuffix(se.Field, ".views[0].leads") || !strings.Contains(se.Msg, "positive after") {
		t.Fatalf("a leading view without after: %v", err)
	}
	sc, err := Parse([]byte(head + "faults: [{at: 1s, sentinel: {failover: {promote: r2, views: [{sentinel: s1, after: 2s, leads: true}]}}}]\n"))
	if err != nil || !sc.Faults[0].Sentinel.Failover.Views[0].Leads {
		t.Fatalf("a leading view: %v", err)
	}
}
