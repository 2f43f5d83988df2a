package check

import (
	"maps"
	"math"
	"math/big"
	"slices"
	"time"

	"github.com/respire-go/respire/fsm"
	"github.com/respire-go/respire/sim/record"
)

// Policy checks the spec's command-slot rules on the engine steps, recomputing the policy's bounds
// independently of fsm (DESIGN checker 5): attempts are numbered 1, 2, ... within an episode and
// restart at 1 after a ready connection; never exceed MaxAttempts; the observed time between an
// attempt's scheduling and its dial lies in the policy's jitter band for that attempt; a slot
// has at most one attempt in flight; an exhausted slot never dials again; without a policy no
// delay is ever scheduled (a timer is armed only to rest a slot).
//
// It also bounds the dial rate of attempts that no policy governs (every attempt without a
// policy, initial connections with one): after a slot's n-th consecutive failed attempt, its next
// dial comes no sooner than the no-policy wait after n failures (250 ms doubling up to 5 s),
// however many commands arrive meanwhile (issue 10, defect 6).
type Policy struct {
	// Policy is the scenario's reconnect policy, or nil.
	Policy *fsm.Policy
	// Lifetime says that lifetime recycling is on. Its timers (a deadline, a replacement's retry)
	// are then not reconnect delays: a timer armed in a step that routes no slot to scheduled
	// is left to the lifetime checker. Replacement dials carry attempt 0 and are tracked like
	// any attempt, one in flight per slot.
	Lifetime bool
}

// Name implements Checker.
func (Policy) Name() string { return CheckPolicy }

type slotTrack struct {
	// scheduledAt and scheduledAttempt describe the attempt waiting for its delay.
	scheduledAt      time.Duration
	scheduledAttempt int
	scheduledDelay   time.Duration
	scheduled        bool
	// lastAttempt is the last policy attempt number dialed in the current episode.
	lastAttempt int
	dialing     fsm.ConnID
	exhausted   bool
	// state is the slot's last routed state; everReady says it was ever ready.
	state     fsm.SlotState
	everReady bool
	// restFailures counts the consecutive failed attempts no policy governed since the slot was
	// last ready; failedAt is when the last one failed.
	restFailures int
	failedAt     time.Duration
}

// Check implements Checker.
func (c Policy) Check(r *record.Result) []Violation {
	p := c.fold(r)
	for i := range r.Steps {
		p.step(i, &r.Steps[i], r.Clients)
	}
	return p.out
}

// policyFold is the policy checker's state over the steps, which it takes one at a time, in
// order: the whole journal at once (Check), or in batches as the run hands them over (stream).
type policyFold struct {
	c        Policy
	lag      time.Duration
	slots    map[int]*slotTrack
	connSlot map[fsm.ConnID]int
	// gen is the number of client generations begun (record.ClientGen).
	gen int
	out []Violation
}

func (c Policy) fold(r *record.Result) *policyFold {
	return &policyFold{c: c, lag: loopLag(r), slots: map[int]*slotTrack{}, connSlot: map[fsm.ConnID]int{}}
}

func (p *policyFold) track(i int) *slotTrack {
	if p.slots[i] == nil {
		p.slots[i] = &slotTrack{}
	}
	return p.slots[i]
}

// step takes step si of the run (its index in the whole journal).
func (p *policyFold) step(si int, st *record.Step, clients []record.ClientGen) {
	at := st.Event.At
	for p.gen < len(clients) && si == clients[p.gen].Step {
		// A recreated client (scenario actions): fresh machines, fresh slots.
		clear(p.slots)
		p.gen++
	}
	if renewedSlots(st) {
		renew(p.slots) // a Sentinel client's new generation (sentinel.go)
	}
	// Retirement and disposal cancel every scheduled attempt.
	if st.Event.Kind == fsm.Retired || st.Event.Kind == fsm.Disposed {
		for _, i := range slices.Sorted(maps.Keys(p.slots)) {
			p.slots[i].scheduled = false
		}
	}
	// A failed or lost dial ends that attempt.
	if st.Event.Kind == fsm.DialFailed || st.Event.Kind == fsm.ConnLost || st.Event.Kind == fsm.HandshakeDone {
		if i, ok := p.connSlot[st.Event.Conn]; ok && p.track(i).dialing == st.Event.Conn {
			s := p.track(i)
			s.dialing = 0
			// A failed attempt of a slot that is not ready (a lifetime replacement fails
			// while its slot serves, and rests nothing).
			if st.Event.Kind != fsm.HandshakeDone && s.state != fsm.SlotReady && (p.c.Policy == nil || !s.everReady) {
				s.restFailures++
				s.failedAt = at
			}
		}
	}
	lifetimeTimers := p.c.Lifetime && !routesTo(st.Effects, fsm.SlotScheduled)
	rests := routesTo(st.Effects, fsm.SlotResting)
	for _, f := range st.Effects {
		if f.Machine != fsm.MachineMux && f.Machine != fsm.MachineNodeMux {
			// Dedicated rents and pub/sub episodes have their own checkers.
			continue
		}
		// A Cluster node's command slots are tracked per node.
		k := slotKey(f.Node, f.Slot)
		switch f.Kind {
		case fsm.ArmTimer:
			if p.c.Policy == nil && !lifetimeTimers && !rests {
				p.out = append(p.out, violation(CheckPolicy, at, "a delay was scheduled without a reconnect policy"))
			}
		case fsm.Route:
			s := p.track(k)
			s.state = f.State
			if f.State == fsm.SlotReady {
				s.everReady = true
				s.restFailures = 0
			}
		case fsm.Close:
			// The machine abandoned an attempt (a lifetime replacement whose old connection
			// failed): it is no longer in flight.
			if i, ok := p.connSlot[f.Conn]; ok && p.track(i).dialing == f.Conn {
				p.track(i).dialing = 0
			}
		case fsm.Emit:
			l := f.Lifecycle
			if l.Source != fsm.SourceCommand || l.Slot < 0 || l.Recycle != fsm.RecycleNone {
				continue
			}
			k = slotKey(f.Node, l.Slot)
			s := p.track(k)
			switch {
			case l.SourceState == fsm.SourceConnected:
				s.lastAttempt = 0
			case l.Scheduled:
				if s.exhausted {
					p.out = append(p.out, violation(CheckPolicy, at, slotName(k)+" scheduled attempt "+itoa(l.Attempt)+" after exhaustion"))
				}
				if want := s.lastAttempt + 1; l.Attempt != want {
					p.out = append(p.out, violation(CheckPolicy, at, slotName(k)+" scheduled attempt "+itoa(l.Attempt)+", want "+itoa(want)))
				}
				if p.c.Policy != nil && p.c.Policy.MaxAttempts > 0 && l.Attempt > p.c.Policy.MaxAttempts {
					p.out = append(p.out, violation(CheckPolicy, at, slotName(k)+" attempt "+itoa(l.Attempt)+" beyond MaxAttempts "+itoa(p.c.Policy.MaxAttempts)))
				}
				if p.c.Policy != nil {
					lo, hi := Band(p.c.Policy, l.Attempt)
					if l.NextDelay < lo || l.NextDelay > hi {
						p.out = append(p.out, violation(CheckPolicy, at, slotName(k)+" attempt "+itoa(l.Attempt)+" delay "+
							l.NextDelay.String()+" outside ["+lo.String()+", "+hi.String()+"]"))
					}
				}
				s.scheduled, s.scheduledAt, s.scheduledAttempt, s.scheduledDelay = true, at, l.Attempt, l.NextDelay
				s.lastAttempt = l.Attempt
			case l.Exhausted:
				s.exhausted = true
				if p.c.Policy == nil || p.c.Policy.MaxAttempts == 0 || l.Attempt != p.c.Policy.MaxAttempts {
					p.out = append(p.out, violation(CheckPolicy, at, slotName(k)+" exhausted at attempt "+itoa(l.Attempt)))
				}
			}
		case fsm.Dial:
			s := p.track(k)
			p.connSlot[f.Conn] = k
			if s.state != fsm.SlotReady && f.Attempt == 0 && s.restFailures > 0 {
				if rest := noPolicyWait(s.restFailures); at-s.failedAt < rest {
					p.out = append(p.out, violation(CheckPolicy, at, slotName(k)+" dialed "+(at-s.failedAt).String()+
						" after its failure "+itoa(s.restFailures)+" in a row; attempts no policy governs are spaced by "+rest.String()))
				}
			}
			if s.exhausted {
				p.out = append(p.out, violation(CheckPolicy, at, slotName(k)+" dialed after exhaustion"))
			}
			if s.dialing != 0 {
				p.out = append(p.out, violation(CheckPolicy, at, slotName(k)+" started a second attempt while one was in flight"))
			}
			s.dialing = f.Conn
			if p.c.Policy == nil && f.Attempt != 0 {
				p.out = append(p.out, violation(CheckPolicy, at, "attempt number "+itoa(f.Attempt)+" without a policy"))
			}
			if p.c.Policy != nil && p.c.Policy.MaxAttempts > 0 && f.Attempt > p.c.Policy.MaxAttempts {
				p.out = append(p.out, violation(CheckPolicy, at, slotName(k)+" dialed attempt "+itoa(f.Attempt)+" beyond MaxAttempts "+itoa(p.c.Policy.MaxAttempts)))
			}
			if s.scheduled {
				waited := at - s.scheduledAt
				lag := p.lag
				if f.Attempt != s.scheduledAttempt {
					p.out = append(p.out, violation(CheckPolicy, at, slotName(k)+" dialed attempt "+itoa(f.Attempt)+" but attempt "+itoa(s.scheduledAttempt)+" was scheduled"))
				}
				if waited < s.scheduledDelay || waited > s.scheduledDelay+lag {
					p.out = append(p.out, violation(CheckPolicy, at, slotName(k)+" attempt "+itoa(f.Attempt)+" dialed after "+waited.String()+
						", scheduled delay was "+s.scheduledDelay.String()))
				}
				if p.c.Policy != nil {
					lo, hi := Band(p.c.Policy, f.Attempt)
					if waited < lo || waited > hi+lag {
						p.out = append(p.out, violation(CheckPolicy, at, slotName(k)+" attempt "+itoa(f.Attempt)+" waited "+waited.String()+
							" outside ["+lo.String()+", "+hi.String()+"]"))
					}
				}
				s.scheduled = false
			} else if p.c.Policy != nil && f.Attempt > 0 {
				p.out = append(p.out, violation(CheckPolicy, at, slotName(k)+" dialed policy attempt "+itoa(f.Attempt)+" without scheduling it"))
			}
		}
	}
}

// slotKey identifies a command slot: the standalone slots by their index, a Cluster node's
// slots by node and index.
func slotKey(node uint32, slot int) int { return int(node)<<16 | slot }

// slotName names a slot in violations: "slot 2", or "node 3 slot 2".
func slotName(k int) string {
	if node := k >> 16; node != 0 {
		return "node " + itoa(node) + " slot " + itoa(k&0xffff)
	}
	return "slot " + itoa(k)
}

// routesTo reports whether a step's effects route a command slot to state: scheduled marks a
// reconnect delay, resting the rest that follows an attempt no policy governed.
func routesTo(effects []fsm.Effect, state fsm.SlotState) bool {
	for i := range effects {
		if f := &effects[i]; f.Kind == fsm.Route && (f.Machine == fsm.MachineMux || f.Machine == fsm.MachineNodeMux) && f.State == state {
			return true
		}
	}
	return false
}

// loopLag is the lag of the run's event loop (Runtime.LoopLag): an event is stepped up to that
// much after it happened, so a timer's dial may come that much after its delay.
func loopLag(r *record.Result) time.Duration {
	if r.Scenario == nil {
		return 0
	}
	return r.Scenario.Runtime.LoopLag
}

// Band returns the interval the delay of policy attempt n must lie in, computed with exact
// arithmetic independently of fsm.Policy: min(cap, initial*multiplier^(n-1)) scaled by
// [1-J, 1+J] and capped again, widened by one nanosecond each side for rounding.
func Band(p *fsm.Policy, n int) (lo, hi time.Duration) {
	limit := p.MaxDelay
	if limit == 0 {
		limit = fsm.DelayCeiling
	}
	mult := p.BackoffMultiplier
	if mult == 0 {
		mult = fsm.DefaultBackoffMultiplier
	}
	base := new(big.Float).SetInt64(int64(p.InitialDelay))
	capF := new(big.Float).SetInt64(int64(limit))
	m := new(big.Float).SetFloat64(mult)
	for i := 1; i < n && base.Cmp(capF) < 0; i++ {
		base.Mul(base, m)
	}
	if base.Cmp(capF) > 0 {
		base = capF
	}
	b, _ := base.Float64()
	l := math.Min(b*(1-p.JitterRatio), float64(limit))
	h := math.Min(b*(1+p.JitterRatio), float64(limit))
	lo, hi = time.Duration(l)-1, time.Duration(h)+1
	if lo < 0 {
		lo = 0
	}
	return lo, hi
}

// noPolicyWait is the spec's wait after n failed attempts without a policy.
func noPolicyWait(n int) time.Duration {
	d := 250 * time.Millisecond
	for i := 1; i < n && d < 5*time.Second; i++ {
		d *= 2
	}
	return min(d, 5*time.Second)
}
