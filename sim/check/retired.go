package check

import (
	"net"
	"strconv"
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/record"
	"github.com/respire-go/respire/sim/scenario"
)

// CheckRetired is the name of the retired-endpoint checker.
const CheckRetired = "retired-dials"

// Retired checks DESIGN checker 8 on a Cluster client, the rule the retired-nodes incident broke:
// no dial to an endpoint that left the topology once its grace has passed. An endpoint leaves
// when the client receives a conclusive topology reply (one covering every slot) that no longer
// names it, after one that did; it comes back when a reply names it again. Every dial the
// transport recorded (Result.Dials) to a departed endpoint more than Grace after it left, and
// before it came back, is a violation. Configured seeds are exempt (a round may try them). The
// checker reads the replies as the wire delivered them (the Replied events' parsed replies), not
// the machine's decisions.
type Retired struct {
	// Grace is the retired grace (fsm.DefaultClusterRetiredGrace when zero).
	Grace time.Duration
	// Seeds are the configured seeds, "host:port".
	Seeds []string
}

// Name implements Checker.
func (Retired) Name() string { return CheckRetired }

// leave is one absence of an endpoint from the topology: [from, to), to zero while it lasts.
type leave struct{ from, to time.Duration }

// Check implements Checker.
func (c Retired) Check(r *record.Result) []Violation {
	f := c.fold()
	for i := range r.Steps {
		f.step(i, &r.Steps[i], nil)
	}
	return f.result(r)
}

// retiredFold is the retired checker's state over the steps, taken one at a time (Check, or a
// stream's batches): the endpoints the last conclusive reply named, and each endpoint's absences.
type retiredFold struct {
	c      Retired
	named  map[string]bool
	leaves map[string][]leave
}

func (c Retired) fold() *retiredFold {
	return &retiredFold{c: c, named: map[string]bool{}, leaves: map[string][]leave{}}
}

func (f *retiredFold) step(_ int, st *record.Step, _ []record.ClientGen) {
	ev := &st.Event
	if ev.Kind != fsm.Replied || ev.Reply == nil || !conclusive(ev.Reply) {
		return
	}
	now := map[string]bool{}
	for _, sh := range ev.Reply.Shards {
		for _, n := range sh.Nodes {
			for _, h := range []string{n.Addr.Host, n.IP, n.Hostname} {
				if h != "" {
					now[net.JoinHostPort(h, strconv.Itoa(n.Addr.Port))] = true
				}
			}
		}
	}
	for ep := range f.named {
		if !now[ep] {
			if ls := f.leaves[ep]; len(ls) == 0 || ls[len(ls)-1].to != 0 {
				f.leaves[ep] = append(ls, leave{from: ev.At})
			}
		}
	}
	for ep := range now {
		if ls := f.leaves[ep]; len(ls) > 0 && ls[len(ls)-1].to == 0 {
			ls[len(ls)-1].to = ev.At
		}
	}
	f.named = now
}

// result judges the run's dials (r.Dials) against the absences.
func (f *retiredFold) result(r *record.Result) []Violation {
	grace := f.c.Grace
	if grace == 0 {
		grace = fsm.DefaultClusterRetiredGrace
	}
	seeds := map[string]bool{}
	for _, s := range f.c.Seeds {
		seeds[s] = true
	}
	var out []Violation
	for _, d := range r.Dials {
		if seeds[d.Endpoint] {
			continue
		}
		for _, l := range f.leaves[d.Endpoint] {
			if d.At > l.from+grace && (l.to == 0 || d.At < l.to) {
				out = append(out, violation(CheckRetired, d.At, "dial to "+d.Endpoint+", which left the topology at "+
					l.from.String()+" (grace "+grace.String()+")"))
				break
			}
		}
	}
	return out
}

// conclusive reports whether a topology reply covers every slot.
func conclusive(r *fsm.TopologyReply) bool {
	covered := 0
	for _, sh := range r.Shards {
		for _, rg := range sh.Ranges {
			covered += int(rg.Last) - int(rg.First) + 1
		}
	}
	return covered >= fsm.SlotCount
}

// retiredFor returns the Retired checker of a scenario: its Cluster's grace and seeds.
func retiredFor(sc *scenario.Scenario) Retired {
	c := Retired{}
	if cfg := sc.EngineConfig(); cfg.Cluster != nil {
		c.Grace = cfg.Cluster.RetiredGrace
		for _, s := range cfg.Cluster.Seeds {
			c.Seeds = append(c.Seeds, s.String())
		}
	}
	return c
}
