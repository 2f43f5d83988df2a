package engine

import (
	"time"

	"github.com/respire-go/respire/fsm"
)

// Capture bounds and defaults (see CaptureConfig).
const (
	// MinCaptureSize and MaxCaptureSize bound CaptureConfig.Size when it is set. A ring of Size
	// events holds about 2.3 KiB per event (the events, CaptureEffectsPerEvent effects each, and
	// two snapshots): 2.3 MiB for 1024 events, 37 MiB at the maximum.
	MinCaptureSize = 16
	MaxCaptureSize = 1 << 14
	// CaptureEffectsPerEvent sizes the capture's effect ring: Size times this many effects.
	CaptureEffectsPerEvent = 8
	// DefaultCaptureBurstFailures and DefaultCaptureBurstWindow are the burst trigger's
	// thresholds when CaptureConfig leaves them zero: this many connection failures (failed
	// dials and lost connections) within the window.
	DefaultCaptureBurstFailures = 16
	DefaultCaptureBurstWindow   = 10 * time.Second
	// MaxCaptureBurstFailures bounds CaptureConfig.BurstFailures.
	MaxCaptureBurstFailures = 1 << 16
)

// CaptureConfig configures an engine's incident capture: a ring of the last Size events with
// their effects and machine snapshots, so that the ring's tail replays (see Engine.DumpCapture).
// The zero value captures nothing.
type CaptureConfig struct {
	// Size is the number of events the ring keeps: zero for no capture, otherwise
	// MinCaptureSize to MaxCaptureSize. A dump holds between Size/2 and Size events: the ring
	// takes a snapshot every Size/2 events (or sooner, once the events since the last one had
	// Size*CaptureEffectsPerEvent/2 effects), and a dump starts at the older of its two
	// snapshots.
	Size int
	// Exhaustion triggers a dump when a recovery source reaches its reconnect policy's limit.
	Exhaustion bool
	// BurstFailures, when positive, triggers a dump when that many connection failures (failed
	// dials and lost connections) happen within BurstWindow; at most MaxCaptureBurstFailures.
	// Zero takes DefaultCaptureBurstFailures; negative disables the trigger.
	BurstFailures int
	// BurstWindow is the burst trigger's window (zero: DefaultCaptureBurstWindow).
	BurstWindow time.Duration
}

// Validate reports whether c is within its bounds.
func (c CaptureConfig) Validate() error {
	switch {
	case c.Size != 0 && (c.Size < MinCaptureSize || c.Size > MaxCaptureSize):
		return &ConfigError{Field: "Capture.Size", Reason: "must be 0 (no capture) or between 16 and 16384"}
	case c.BurstFailures > MaxCaptureBurstFailures:
		return &ConfigError{Field: "Capture.BurstFailures", Reason: "must be at most 65536"}
	case c.BurstWindow < 0 || c.BurstWindow > 24*time.Hour:
		return &ConfigError{Field: "Capture.BurstWindow", Reason: "must be between 0 (the default) and 24h"}
	}
	return nil
}

// CaptureReason says why a dump was taken.
type CaptureReason uint8

// Capture reasons.
const (
	// CaptureOnDemand: the application asked (DumpCapture).
	CaptureOnDemand CaptureReason = iota + 1
	// CaptureExhaustion: a recovery source reached its reconnect limit.
	CaptureExhaustion
	// CaptureBurst: connection failures reached the burst threshold.
	CaptureBurst
	// CapturePredicate: the application's predicate matched an observation.
	CapturePredicate
)

var captureReasonNames = [...]string{"none", "on-demand", "exhaustion", "failure-burst", "predicate"}

// String returns the kebab-case name of the reason.
func (r CaptureReason) String() string {
	if int(r) < len(captureReasonNames) {
		return captureReasonNames[r]
	}
	return "capture-reason(?)"
}

// captureSnap is a snapshot of the machines before event seq (and effect effSeq). fresh means
// the machines were new (seq 0) and data is empty; ok means the slot holds a snapshot.
type captureSnap struct {
	seq, effSeq uint64
	data        []byte
	ok, fresh   bool
}

// capture is the engine's incident ring. It is loop-owned: record runs in step, dumps run on
// the loop (or after it stopped).
type capture struct {
	cfg     CaptureConfig
	events  []fsm.Event
	first   []uint64 // per event: the sequence number of its first effect
	count   []uint32 // per event: its number of effects
	effects []fsm.Effect
	seq     uint64 // events recorded
	effSeq  uint64 // effects recorded
	// snaps[0] is the older snapshot, snaps[1] the newer; a dump starts at the oldest one whose
	// window is still entirely in the rings.
	snaps [2]captureSnap
	// snapErr is the last snapshot failure (the machines hold something the codec refuses).
	snapErr error
	// failures are the times of the last burst-threshold failures, a ring.
	failures     []time.Duration
	failureNext  int
	failureCount int
	// quietUntil is the event sequence before which no trigger fires again.
	quietUntil uint64
}

func newCapture(cfg CaptureConfig) *capture {
	if cfg.Size == 0 {
		return nil
	}
	if cfg.BurstFailures == 0 {
		cfg.BurstFailures = DefaultCaptureBurstFailures
	}
	if cfg.BurstWindow == 0 {
		cfg.BurstWindow = DefaultCaptureBurstWindow
	}
	c := &capture{cfg: cfg, events: make([]fsm.Event, cfg.Size), first: make([]uint64, cfg.Size),
		count: make([]uint32, cfg.Size), effects: make([]fsm.Effect, cfg.Size*CaptureEffectsPerEvent)}
	if cfg.BurstFailures > 0 {
		c.failures = make([]time.Duration, cfg.BurstFailures)
	}
	c.snaps[1] = captureSnap{ok: true, fresh: true}
	return c
}

// record appends ev and its effects, stepped on m, and reports the trigger it fires, if any.
// It allocates nothing, except for the snapshot it takes every Size/2 events.
func (c *capture) record(ev *fsm.Event, effects []fsm.Effect, m *machines) CaptureReason {
	i := c.seq % uint64(len(c.events))
	c.events[i] = *ev
	c.first[i], c.count[i] = c.effSeq, uint32(len(effects))
	n := uint64(len(c.effects))
	for j := range effects {
		c.effects[c.effSeq%n] = effects[j]
		c.effSeq++
	}
	c.seq++
	reason := c.trigger(ev, effects)
	cur := &c.snaps[1]
	if c.seq-cur.seq >= uint64(len(c.events)/2) || c.effSeq-cur.effSeq >= n/2 {
		c.snapshot(m)
	}
	return reason
}

// trigger reports the dump ev fires, if any, at most one per Size/2 events.
func (c *capture) trigger(ev *fsm.Event, effects []fsm.Effect) CaptureReason {
	reason := CaptureReason(0)
	if c.failures != nil && (ev.Kind == fsm.DialFailed || ev.Kind == fsm.ConnLost) {
		c.failures[c.failureNext] = ev.At
		c.failureNext = (c.failureNext + 1) % len(c.failures)
		c.failureCount = min(c.failureCount+1, len(c.failures))
		// The oldest of the last BurstFailures failures is at failureNext once the ring is full.
		if c.failureCount == len(c.failures) && ev.At-c.failures[c.failureNext] <= c.cfg.BurstWindow {
			reason = CaptureBurst
		}
	}
	if c.cfg.Exhaustion {
		for j := range effects {
			if effects[j].Kind == fsm.Emit && effects[j].Lifecycle.Exhausted {
				reason = CaptureExhaustion
				break
			}
		}
	}
	if reason == 0 || c.seq < c.quietUntil {
		return 0
	}
	c.quietUntil = c.seq + uint64(len(c.events)/2)
	return reason
}

// snapshot makes the newer snapshot the older one and takes a new one of m, before the next
// event. The older snapshot's buffer is reused.
func (c *capture) snapshot(m *machines) {
	c.snaps[0], c.snaps[1] = c.snaps[1], c.snaps[0]
	s := &c.snaps[1]
	data, err := encodeState(s.data[:0], m, nil, nil)
	*s = captureSnap{seq: c.seq, effSeq: c.effSeq, data: data, ok: err == nil}
	if err != nil {
		c.snapErr = err
	}
}

// start returns the snapshot a dump starts at: the oldest whose events and effects are all
// still in the rings, or nil.
func (c *capture) start() *captureSnap {
	for i := range c.snaps {
		s := &c.snaps[i]
		if s.ok && c.seq-s.seq <= uint64(len(c.events)) && c.effSeq-s.effSeq <= uint64(len(c.effects)) {
			return s
		}
	}
	return nil
}

// at returns the event of sequence number seq and its effects, which must be in the rings. The
// effects are appended to dst.
func (c *capture) at(seq uint64, dst []fsm.Effect) (*fsm.Event, []fsm.Effect) {
	i := seq % uint64(len(c.events))
	n := uint64(len(c.effects))
	for k := uint64(0); k < uint64(c.count[i]); k++ {
		dst = append(dst, c.effects[(c.first[i]+k)%n])
	}
	return &c.events[i], dst
}
