package topo

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/netio/resp"
)

func TestClassifyRejection(t *testing.T) {
	for _, c := range []struct {
		v    resp.Value
		want Rejection
	}{
		{resp.ErrorValue("MOVED 3999 127.0.0.1:6381"), RejectionMoved},
		{resp.ErrorValue("ASK 3999 127.0.0.1:6381"), RejectionAsk},
		{resp.ErrorValue("CLUSTERDOWN The cluster is down"), RejectionClusterDown},
		{resp.ErrorValue("CLUSTERDOWN Hash slot not served"), RejectionClusterDown},
		{resp.ErrorValue("TRYAGAIN Multiple keys request during rehashing of slot"), RejectionTryAgain},
		{resp.ErrorValue("READONLY You can't write against a read only replica."), RejectionReadOnly},
		{resp.ErrorValue("MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."), RejectionMasterDown},
		{resp.ErrorValue("LOADING Redis is loading the dataset in memory"), RejectionLoading},
		{resp.BulkErrorValue("LOADING Redis is loading the dataset in memory"), RejectionLoading},
		{resp.ErrorValue("LOADING"), RejectionLoading},
		{resp.ErrorValue("ERR unknown command"), RejectionNone},
		{resp.ErrorValue("BUSY Redis is busy running a script"), RejectionNone},
		{resp.ErrorValue("MOVEDX 1 a:1"), RejectionNone},
		{resp.ErrorValue("moved 1 a:1"), RejectionNone},
		{resp.ErrorValue(""), RejectionNone},
		{resp.SimpleString("MOVED 3999 127.0.0.1:6381"), RejectionNone}, // not an error
		{resp.BulkString("LOADING"), RejectionNone},
	} {
		got := ClassifyRejection(c.v)
		if got != c.want {
			t.Errorf("ClassifyRejection(%v) = %v, want %v", c.v, got, c.want)
		}
		if got.NotExecuted() != (c.want != RejectionNone) {
			t.Errorf("%v.NotExecuted() = %v", got, got.NotExecuted())
		}
		if got.IsRedirect() != (c.want == RejectionMoved || c.want == RejectionAsk) {
			t.Errorf("%v.IsRedirect() = %v", got, got.IsRedirect())
		}
	}
	v := resp.ErrorValue("TRYAGAIN Multiple keys request during rehashing of slot")
	if n := testing.AllocsPerRun(100, func() { _ = ClassifyRejection(v) }); n != 0 {
		t.Fatalf("ClassifyRejection: %v allocations", n)
	}
}

func TestParseRedirect(t *testing.T) {
	sender := fsm.MakeEndpoint("10.0.0.9", 7000)
	for _, c := range []struct {
		msg      string
		want     Redirect
		resolved string // "" when unresolvable
	}{
		{"MOVED 3999 127.0.0.1:6381", Redirect{RejectionMoved, 3999, fsm.Endpoint{Host: "127.0.0.1", Port: 6381}, HostGiven}, "127.0.0.1:6381"},
		{"ASK 12 127.0.0.1:6381", Redirect{RejectionAsk, 12, fsm.Endpoint{Host: "127.0.0.1", Port: 6381}, HostGiven}, "127.0.0.1:6381"},
		{"MOVED 0 ::1:7000", Redirect{RejectionMoved, 0, fsm.Endpoint{Host: "::1", Port: 7000}, HostGiven}, "[::1]:7000"},
		{"MOVED 16383 [2001:0DB8::1]:7000", Redirect{RejectionMoved, 16383, fsm.Endpoint{Host: "2001:db8::1", Port: 7000}, HostGiven}, "[2001:db8::1]:7000"},
		{"MOVED 5 0:0:0:0:0:0:0:1:7000", Redirect{RejectionMoved, 5, fsm.Endpoint{Host: "::1", Port: 7000}, HostGiven}, "[::1]:7000"},
		{"MOVED 12182 Node-3.Example.internal:47003", Redirect{RejectionMoved, 12182, fsm.Endpoint{Host: "node-3.example.internal", Port: 47003}, HostGiven}, "node-3.example.internal:47003"},
		// cluster-preferred-endpoint-type unknown-endpoint: the sender's host.
		{"MOVED 12182 :47003", Redirect{RejectionMoved, 12182, fsm.Endpoint{Port: 47003}, HostSameAsSender}, "10.0.0.9:47003"},
		// hostname preferred but none announced: unknown.
		{"ASK 7 ?:47006", Redirect{RejectionAsk, 7, fsm.Endpoint{Port: 47006}, HostUnknown}, ""},
	} {
		got, err := ParseRedirect(resp.ErrorValue(c.msg))
		if err != nil || got != c.want {
			t.Errorf("ParseRedirect(%q) = %+v, %v; want %+v", c.msg, got, err, c.want)
			continue
		}
		ep, ok := got.Resolve(sender)
		if ok != (c.resolved != "") || (ok && ep.String() != c.resolved) {
			t.Errorf("%q resolves to %v, %v; want %q", c.msg, ep, ok, c.resolved)
		}
	}
	if _, ok := (Redirect{Kind: RejectionMoved, Target: fsm.Endpoint{Port: 1}, Host: HostSameAsSender}).Resolve(fsm.Endpoint{}); ok {
		t.Error("a same-host redirect resolved without a sender host")
	}
}

func TestParseRedirectRejects(t *testing.T) {
	for _, v := range []resp.Value{resp.ErrorValue("ERR nope"), resp.SimpleString("MOVED 1 a:1"), resp.ErrorValue("CLUSTERDOWN x")} {
		if _, err := ParseRedirect(v); !errors.Is(err, ErrNotRedirect) {
			t.Errorf("ParseRedirect(%v): %v, want ErrNotRedirect", v, err)
		}
	}
	for _, msg := range []string{
		"MOVED", "MOVED ", "MOVED 1", "MOVED 1 ", "MOVED x 127.0.0.1:1", "MOVED -1 127.0.0.1:1", "MOVED 16384 127.0.0.1:1",
		"MOVED 99999999999 127.0.0.1:1", "MOVED 1 127.0.0.1", "MOVED 1 127.0.0.1:", "MOVED 1 127.0.0.1:0", "MOVED 1 127.0.0.1:65536",
		"MOVED 1 127.0.0.1:1 extra", "MOVED  1 127.0.0.1:1", "ASK 1 bad host:1", "ASK 1 [node]:1", "ASK 1 no/slash:1",
		"ASK 1 [::1:7000", "MOVED 1 " + strings.Repeat("a", 300) + ":1", "MOVED 1 ??:1",
	} {
		_, err := ParseRedirect(resp.ErrorValue(msg))
		var re *ReplyError
		if !errors.As(err, &re) || !errors.Is(err, ErrMalformedReply) {
			t.Errorf("ParseRedirect(%q): %v, want a *ReplyError", msg, err)
			continue
		}
		if strings.Contains(err.Error(), "127.0.0.1") || strings.Contains(err.Error(), "aaaa") {
			t.Errorf("the error quotes the reply: %v", err)
		}
	}
}

func TestRedirectString(t *testing.T) {
	for msg, want := range map[string]string{
		"MOVED 3999 127.0.0.1:6381": "MOVED slot=3999 to=127.0.0.1:6381",
		"ASK 12 :7002":              "ASK slot=12 to=same-as-sender:7002",
		"MOVED 1 ?:7002":            "MOVED slot=1 to=unknown:7002",
		"MOVED 1 ::1:7002":          "MOVED slot=1 to=[::1]:7002",
	} {
		r, err := ParseRedirect(resp.ErrorValue(msg))
		if err != nil || r.String() != want {
			t.Errorf("%q: %v, %v; want %q", msg, r.String(), err, want)
		}
	}
}

func FuzzParseRedirect(f *testing.F) {
	for _, s := range []string{"MOVED 3999 127.0.0.1:6381", "ASK 1 ::1:7000", "MOVED 1 :1", "ASK 2 ?:3", "MOVED 1 [::1]:2", "MOVED 16383 Node.Example:65535"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, msg string) {
		r, err := ParseRedirect(resp.ErrorValue(msg))
		if err != nil {
			var re *ReplyError
			if !errors.Is(err, ErrNotRedirect) && !errors.As(err, &re) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if !r.Kind.IsRedirect() || int(r.Slot) >= fsm.SlotCount || r.Target.Port < 1 || r.Target.Port > 65535 {
			t.Fatalf("out of range: %+v", r)
		}
		if (r.Host == HostGiven) != (r.Target.Host != "") || fsm.CanonicalHost(r.Target.Host) != r.Target.Host {
			t.Fatalf("host not canonical or form inconsistent: %+v", r)
		}
		// The parse is stable: writing the redirect back and parsing it again gives it again.
		host := r.Target.Host
		switch r.Host {
		case HostSameAsSender:
			host = ""
		case HostUnknown:
			host = "?"
		}
		again, err := ParseRedirect(resp.ErrorValue(r.Kind.String() + " " + strconv.Itoa(int(r.Slot)) + " " + host + ":" + strconv.Itoa(r.Target.Port)))
		if err != nil || again != r {
			t.Fatalf("%q parsed as %+v, whose own form parses as %+v, %v", msg, r, again, err)
		}
	})
}
