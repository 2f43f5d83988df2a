package fsm

import (
	"testing"
	"time"

	"pgregory.net/rapid"
)

// routerModel is an independent account of what a router has been told, built from its events
// and effects only, against which every routing decision is checked.
type routerModel struct {
	cfg   RouterConfig
	cands []modelCandidate
	// hedges and eligible count hedges sent and hedge-eligible reads.
	hedges, eligible int
	// credits is the hedge budget by the spec's rule: each eligible read adds the percent, at
	// most one hedge (100) is stored, a hedge spends 100.
	credits int
	// watched maps a watched read to its policy, original target and hedge target (-1 none).
	watched map[ReadID]*modelRead
	settled map[ReadID]bool
	// parked maps the reads that wait behind pending probes or a pending re-validation to their
	// policy; parkedUntil to the end of their wait (ProbeDeadline after they started).
	parked      map[ReadID]ReadFrom
	parkedUntil map[ReadID]time.Duration
	// emitted marks the candidates whose validation the current step sends.
	emitted map[int]bool
	// inFlight counts the probes sent and not yet answered, failed or expired.
	inFlight int
}

type modelCandidate struct {
	answered             bool // a RoleAnswered since the last TargetFailed (replicas)
	replica, stale       bool
	link                 Link
	zone                 string
	zoneKnown            bool
	answeredAt           time.Duration
	coolUntil            time.Duration
	validating           bool
	probing              bool
	probeSent, lastProbe time.Duration
	probed               bool
	sampled              bool
	rtt, sampledAt       time.Duration
	validateAnsweredAt   time.Duration // the last RoleAnswered or RoleFailed, for spacing
	validateAnswered     bool
	validateSent         time.Duration // the last ValidateTarget
}

type modelRead struct {
	policy          ReadFrom
	original, hedge int
	ok              map[int]bool
}

func (m *routerModel) cooldown(i int) time.Duration {
	if i == 0 {
		return PrimaryCooldown
	}
	return m.cfg.RefreshInterval
}

func (m *routerModel) usable(i int, at time.Duration) bool {
	c := &m.cands[i]
	if at < c.coolUntil {
		return false
	}
	if i == 0 {
		return true
	}
	return c.answered && c.replica && at-c.answeredAt < 2*m.cfg.RefreshInterval && (c.link == LinkConnected || c.stale)
}

// order lists the candidates a policy may read from as tiers, best first, by the spec's tables.
func (m *routerModel) tierOf(policy ReadFrom, i int) int {
	c := &m.cands[i]
	local := m.cfg.Zone != "" && c.zoneKnown && c.zone == m.cfg.Zone
	if i == 0 {
		switch policy {
		case ReadPrimary, ReadPrimaryPreferred, ReadNearest:
			return 0
		case ReadReplica:
			return -1
		case ReadReplicaPreferred:
			return 100
		case ReadAzAffinity:
			return 100
		case ReadAzAffinityReplicasAndPrimary:
			if local {
				return 15 // after linked same-zone replicas, before linked other replicas
			}
			return 100
		}
	}
	linkTier := 10 * (int(c.link) + 1) // 10, 20, 30
	switch policy {
	case ReadPrimary:
		return -1
	case ReadPrimaryPreferred:
		return 1 + linkTier
	case ReadNearest:
		return linkTier - 10 // linked replicas share the primary's tier
	case ReadAzAffinity:
		if local {
			return linkTier
		}
		return linkTier + 1
	case ReadAzAffinityReplicasAndPrimary:
		if c.link == LinkConnected && local {
			return 10
		}
		if c.link == LinkConnected {
			return 16
		}
		if local {
			return linkTier
		}
		return linkTier + 1
	}
	return linkTier
}

// band returns the candidates a read under policy may go to, never exclude, and whether some
// usable candidate has a probe pending.
func (m *routerModel) band(policy ReadFrom, exclude int, at time.Duration) (band []int, pending bool) {
	best := -1
	for i := range m.cands {
		tier := m.tierOf(policy, i)
		if tier < 0 || i == exclude {
			continue
		}
		if !m.usable(i, at) {
			pending = pending || m.revalidating(i, at)
			continue
		}
		if m.cands[i].probing {
			pending = true
			continue
		}
		if best < 0 || tier < best {
			best = tier
		}
	}
	var tier, measured []int
	fastest := time.Duration(-1)
	for i := range m.cands {
		if i == exclude || m.cands[i].probing || !m.usable(i, at) || m.tierOf(policy, i) != best || best < 0 {
			continue
		}
		tier = append(tier, i)
		if c := &m.cands[i]; c.sampled && at-c.sampledAt < EstimateFresh {
			measured = append(measured, i)
			if fastest < 0 || c.rtt < fastest {
				fastest = c.rtt
			}
		}
	}
	if (policy != ReadNearest && !m.cfg.Banded) || len(measured) == 0 {
		return tier, pending
	}
	tolerance := time.Duration(0)
	if m.cfg.Banded {
		tolerance = m.cfg.Tolerance
	}
	for _, i := range measured {
		if m.cands[i].rtt <= fastest+tolerance {
			band = append(band, i)
		}
	}
	return band, pending
}

// revalidating reports whether replica i is unusable only because its validation is older than
// two intervals while a re-validation is pending: sent in this step, or in flight for less than
// ProbeDeadline. A read with nothing else may wait for it.
func (m *routerModel) revalidating(i int, at time.Duration) bool {
	c := &m.cands[i]
	if i == 0 || at < c.coolUntil || !c.answered || !c.replica || !(c.link == LinkConnected || c.stale) ||
		at-c.answeredAt < 2*m.cfg.RefreshInterval {
		return false
	}
	return m.emitted[i] || c.validating && at-c.validateSent < ProbeDeadline
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestRouterProperties steps random event sequences into a router and checks each decision
// against routerModel: a read goes only where its policy allows, to a usable candidate inside
// the band; probes stay within their limits; hedges stay within the budget and go to a
// different peer; each watched read settles once, with a success only from an attempt that
// succeeded. The journal then replays into a fresh router with the same effects.
func TestRouterProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		replicas := rapid.IntRange(1, 5).Draw(t, "replicas")
		cfg := RouterConfig{
			Default:         ReadFrom(rapid.IntRange(0, int(ReadPolicies)-1).Draw(t, "default")),
			RefreshInterval: time.Duration(rapid.IntRange(1, 3000).Draw(t, "interval")) * time.Millisecond,
			Zone:            rapid.SampledFrom([]string{"", "a"}).Draw(t, "zone"),
		}
		for i := 0; i <= replicas; i++ {
			cfg.Endpoints = append(cfg.Endpoints, MakeEndpoint("10.0.0.1", 7000+i))
		}
		if rapid.Bool().Draw(t, "banded") {
			cfg.Banded, cfg.Tolerance = true, time.Duration(rapid.IntRange(0, 5).Draw(t, "tolerance"))*time.Millisecond
		}
		if rapid.Bool().Draw(t, "hedging") {
			cfg.HedgeDelay = time.Duration(rapid.IntRange(1, 50).Draw(t, "delay")) * time.Millisecond
			cfg.HedgeLoadPercent = rapid.IntRange(1, 100).Draw(t, "percent")
		}
		router := NewRouter(cfg)
		m := &routerModel{cfg: cfg, cands: make([]modelCandidate, replicas+1), watched: map[ReadID]*modelRead{},
			settled: map[ReadID]bool{}, parked: map[ReadID]ReadFrom{}, parkedUntil: map[ReadID]time.Duration{}}
		var (
			journal []RouterEvent
			trace   []string
			out     RouterOutbox
			at      time.Duration
			nextID  ReadID
		)
		target := rapid.IntRange(0, replicas)
		steps := rapid.IntRange(1, 200).Draw(t, "steps")
		for step := 0; step < steps; step++ {
			at += time.Duration(rapid.IntRange(0, 400).Draw(t, "advance")) * time.Millisecond
			ev := RouterEvent{At: at}
			switch rapid.IntRange(0, 9).Draw(t, "kind") {
			case 0:
				ev.Kind = Woke
			case 1, 2:
				nextID++
				ev.Kind, ev.Read = ReadStarted, nextID
				ev.Policy = ReadFrom(rapid.IntRange(0, int(ReadPolicies)).Draw(t, "policy"))
				ev.Hedgeable = rapid.Bool().Draw(t, "hedgeable")
			case 3:
				ev.Kind, ev.Read = ReadWithdrawn, ReadID(rapid.IntRange(0, int(nextID)).Draw(t, "read"))
			case 4:
				ev.Kind, ev.Read, ev.Target = ReadEnded, ReadID(rapid.IntRange(0, int(nextID)).Draw(t, "read")), target.Draw(t, "target")
				ev.OK = rapid.Bool().Draw(t, "ok")
			case 5:
				ev.Kind, ev.Target = TargetFailed, target.Draw(t, "target")
			case 6:
				ev.Kind, ev.Target = ProbeAnswered, target.Draw(t, "target")
				ev.RTT = time.Duration(rapid.IntRange(0, 8).Draw(t, "rtt")) * time.Millisecond
			case 7:
				ev.Kind, ev.Target = ProbeFailed, target.Draw(t, "target")
			case 8:
				ev.Kind, ev.Target = RoleAnswered, target.Draw(t, "target")
				ev.Replica = ev.Target != 0 && rapid.IntRange(0, 5).Draw(t, "promoted") > 0
				ev.Link = Link(rapid.IntRange(0, 2).Draw(t, "link"))
				ev.ServeStale = rapid.Bool().Draw(t, "stale")
				if z := rapid.SampledFrom([]string{"", "a", "b"}).Draw(t, "zone"); z != "" {
					ev.Zone, ev.ZoneKnown = z, true
				}
			case 9:
				ev.Kind, ev.Target = RoleFailed, target.Draw(t, "target")
			}
			journal = append(journal, ev)
			out.Reset()
			router.Step(&ev, &out)
			for i := range out.Effects {
				trace = append(trace, out.Effects[i].String())
			}
			m.check(t, &ev, out.Effects)
		}
		replayed := NewRouter(cfg)
		var replay []string
		for i := range journal {
			out.Reset()
			replayed.Step(&journal[i], &out)
			for j := range out.Effects {
				replay = append(replay, out.Effects[j].String())
			}
		}
		if len(replay) != len(trace) {
			t.Fatalf("replay gave %d effects, the run %d", len(replay), len(trace))
		}
		for i := range trace {
			if trace[i] != replay[i] {
				t.Fatalf("replay effect %d: %s, the run's: %s", i, replay[i], trace[i])
			}
		}
	})
}

// check applies ev to the model, then checks the router's effects for it.
func (m *routerModel) check(t *rapid.T, ev *RouterEvent, effects []RouterEffect) {
	at := ev.At
	policy := ev.Policy
	if policy >= ReadPolicies {
		policy = m.cfg.Default
	}
	c := &m.cands[ev.Target]
	m.emitted = map[int]bool{}
	for _, e := range effects {
		if e.Kind == ValidateTarget {
			m.emitted[e.Target] = true
		}
	}
	switch ev.Kind {
	case ReadStarted:
		if m.cfg.HedgeDelay > 0 && ev.Hedgeable && policy != ReadPrimary {
			m.eligible++
			m.credits = min(m.credits+m.cfg.HedgeLoadPercent, 100)
		}
		if band, pending := m.band(policy, -1, at); len(band) == 0 && pending {
			m.parked[ev.Read] = policy
			m.parkedUntil[ev.Read] = at + ProbeDeadline
		}
	case TargetFailed:
		c.coolUntil = max(c.coolUntil, at+m.cooldown(ev.Target))
		c.sampled = false
		if ev.Target != 0 {
			c.answered = false
		}
	case ProbeAnswered:
		if c.probing {
			c.probing, c.sampled, c.rtt, c.sampledAt = false, true, ev.RTT, at
			m.inFlight--
		}
	case ProbeFailed:
		if c.probing {
			c.probing, c.sampled = false, false
			m.inFlight--
		}
	case RoleAnswered:
		c.validating, c.answered, c.replica, c.link, c.stale = false, true, ev.Replica, ev.Link, ev.ServeStale
		c.zone, c.zoneKnown, c.answeredAt = ev.Zone, ev.ZoneKnown, at
		c.validateAnswered, c.validateAnsweredAt = true, at
	case RoleFailed:
		if c.validating {
			c.validating = false
			c.coolUntil = max(c.coolUntil, at+m.cooldown(ev.Target))
			c.validateAnswered, c.validateAnsweredAt = true, at
		}
	case ReadEnded:
		if w := m.watched[ev.Read]; w != nil && ev.OK {
			w.ok[ev.Target] = true
		}
	case ReadWithdrawn:
		delete(m.watched, ev.Read)
		delete(m.parked, ev.Read)
		delete(m.parkedUntil, ev.Read)
	}
	expired := false
	expire := func() {
		if expired {
			return
		}
		expired = true
		for i := range m.cands {
			if c := &m.cands[i]; c.probing && at-c.probeSent >= ProbeDeadline {
				c.probing, c.sampled = false, false
				m.inFlight--
			}
		}
	}
	for _, e := range effects {
		_, parked := m.parked[e.Read]
		first := ev.Kind == ReadStarted && e.Read == ev.Read && (e.Kind == RouteRead || e.Kind == FailRead) && !expired && !parked
		if !first {
			expire()
		}
		switch e.Kind {
		case RouteRead:
			p := policy
			if !first {
				var ok bool
				if p, ok = m.parked[e.Read]; !ok {
					t.Fatalf("read %d routed, neither started nor parked", e.Read)
				}
				delete(m.parked, e.Read)
				delete(m.parkedUntil, e.Read)
			}
			if e.Target != 0 {
				if c := &m.cands[e.Target]; !c.answered || !c.replica || at-c.answeredAt >= 2*m.cfg.RefreshInterval {
					t.Fatalf("read %d went to %d, whose validation is stale or not a replica's", e.Read, e.Target)
				}
			}
			if band, _ := m.band(p, -1, at); !contains(band, e.Target) {
				t.Fatalf("read %d (%s) went to %d, outside the band %v", e.Read, p, e.Target, band)
			}
			if e.Watched {
				if m.cfg.HedgeDelay == 0 {
					t.Fatalf("read %d watched without hedging", e.Read)
				}
				m.watched[e.Read] = &modelRead{policy: p, original: e.Target, hedge: -1, ok: map[int]bool{}}
			}
		case FailRead:
			if !first {
				p, ok := m.parked[e.Read]
				if !ok {
					t.Fatalf("read %d failed, neither started nor parked", e.Read)
				}
				if _, pending := m.band(p, -1, at); pending && at < m.parkedUntil[e.Read] && e.Reason != TooManyWaiting {
					t.Fatalf("read %d failed (%s) while it could still wait", e.Read, e.Reason)
				}
				delete(m.parked, e.Read)
				delete(m.parkedUntil, e.Read)
			}
			if first && e.Reason == NoCandidate {
				if band, pending := m.band(policy, -1, at); len(band) > 0 || pending {
					t.Fatalf("read %d failed with candidates %v (pending %v)", e.Read, band, pending)
				}
			}
		case SendHedge:
			w := m.watched[e.Read]
			if w == nil || w.hedge >= 0 {
				t.Fatalf("hedge of read %d, not watched or already hedged", e.Read)
			}
			if e.Target == w.original || (w.policy == ReadReplica && e.Target == 0) || w.policy == ReadPrimary {
				t.Fatalf("hedge of read %d (%s, original %d) to %d", e.Read, w.policy, w.original, e.Target)
			}
			if !m.usable(e.Target, at) || m.cands[e.Target].probing {
				t.Fatalf("hedge of read %d to unusable %d", e.Read, e.Target)
			}
			w.hedge = e.Target
			m.hedges++
			if m.credits -= 100; m.credits < 0 {
				t.Fatalf("hedge of read %d without a funded hedge in the budget", e.Read)
			}
			if m.hedges*hedgeCost > m.eligible*m.cfg.HedgeLoadPercent {
				t.Fatalf("%d hedges for %d eligible reads at %d%%", m.hedges, m.eligible, m.cfg.HedgeLoadPercent)
			}
		case SettleRead:
			w := m.watched[e.Read]
			if w == nil || m.settled[e.Read] {
				t.Fatalf("settle of read %d, not watched or settled twice", e.Read)
			}
			if e.OK && !w.ok[e.Target] {
				t.Fatalf("read %d settled ok on %d, which did not succeed", e.Read, e.Target)
			}
			if !e.OK && e.Target != w.original {
				t.Fatalf("read %d failed with attempt %d, not the original %d", e.Read, e.Target, w.original)
			}
			m.settled[e.Read] = true
			delete(m.watched, e.Read)
		case SendProbe:
			c := &m.cands[e.Target]
			if c.probing || (c.probed && at-c.lastProbe < ProbeSpacing) {
				t.Fatalf("probe of %d while one is pending or within a second of the last", e.Target)
			}
			c.probing, c.probed, c.probeSent, c.lastProbe = true, true, at, at
			m.inFlight++
			if m.inFlight > ProbesInFlightMax {
				t.Fatalf("%d probes in flight", m.inFlight)
			}
		case ValidateTarget:
			c := &m.cands[e.Target]
			if c.validating {
				t.Fatalf("validation of %d while one is pending", e.Target)
			}
			if c.validateAnswered && at-c.validateAnsweredAt < m.cfg.RefreshInterval && at >= c.coolUntil {
				t.Fatalf("validation of %d %v after the last answer, within the interval", e.Target, at-c.validateAnsweredAt)
			}
			c.validating, c.validateSent = true, at
		case WakeAt:
			if e.At <= at {
				t.Fatalf("wake at %v, not after %v", e.At, at)
			}
		}
	}
	expire()
	for id, until := range m.parkedUntil {
		if at >= until {
			t.Fatalf("read %d still waits at %v, past the end of its wait %v", id, at, until)
		}
	}
}
