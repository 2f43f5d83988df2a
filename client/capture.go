package client

import (
	"bytes"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/respire-go/respire/engine"
)

// Journal capture bounds and defaults (see JournalCaptureOptions).
const (
	// DefaultJournalCaptureSize is the number of events a capture keeps when its Size is zero.
	DefaultJournalCaptureSize = 1024
	// MinJournalCaptureSize and MaxJournalCaptureSize bound JournalCaptureOptions.Size.
	MinJournalCaptureSize = engine.MinCaptureSize
	MaxJournalCaptureSize = engine.MaxCaptureSize
	// DefaultJournalCaptureBurstFailures and DefaultJournalCaptureBurstWindow are the failure
	// burst that triggers a dump when BurstFailures and BurstWindow are zero: 16 connection
	// failures (failed dials and lost connections) within 10 seconds.
	DefaultJournalCaptureBurstFailures = engine.DefaultCaptureBurstFailures
	DefaultJournalCaptureBurstWindow   = engine.DefaultCaptureBurstWindow
)

// ErrJournalCaptureOff reports DumpJournal on a client created without JournalCapture.
var ErrJournalCaptureOff = sentinel("respire: journal capture is not enabled")

// JournalCaptureOptions configure incident capture (Options.JournalCapture): the client keeps
// its state machines' last events, with the effects they had and snapshots of the machines, in
// a bounded ring. A dump of it (JSON Lines, see docs/capture.md) replays in the simulator with
// `respire-sim replay` and becomes a scenario with `respire-sim scenario`. A dump holds the
// configuration that shapes the machines (endpoints as addresses, the reconnect policy, the
// connection counts) and the connection events; it never holds keys, values or credentials, and
// pub/sub channel names are replaced by pseudonyms.
//
// Recording costs one copy of each event and its effects into the preallocated ring, and a
// snapshot of the machines every Size/2 events. Commands on healthy connections record nothing:
// only connection events, demands for connections and recovery reach the machines.
type JournalCaptureOptions struct {
	// Size is the number of events kept: MinJournalCaptureSize to MaxJournalCaptureSize, zero
	// for DefaultJournalCaptureSize. A dump holds between Size/2 and Size events. The ring takes
	// about 2.3 KiB per event.
	Size int
	// OnDump receives the dumps the triggers take: the reason ("exhaustion", "failure-burst",
	// "predicate") and one complete capture. It runs on a goroutine of the client's, one dump at
	// a time; a dump triggered while the previous one is still being handled is dropped. It must
	// not call Close, which waits for it. Without it, the triggers are off and only DumpJournal
	// dumps.
	OnDump func(reason string, dump []byte)
	// SkipExhaustion turns off the exhaustion trigger: by default a dump is taken when a
	// recovery source (a command slot, a dedicated rent, a pub/sub episode, a discovery)
	// reaches the reconnect policy's limit.
	SkipExhaustion bool
	// BurstFailures is the number of connection failures (failed dials and lost connections)
	// within BurstWindow that triggers a dump: zero for DefaultJournalCaptureBurstFailures,
	// negative to turn the trigger off, at most 65536.
	BurstFailures int
	// BurstWindow is the burst trigger's window: zero for DefaultJournalCaptureBurstWindow, at
	// most 24h.
	BurstWindow time.Duration
	// Trigger, when set, is asked about every connection state change (after
	// OnConnectionStateChange, on the same goroutine); true takes a dump. Keep it short.
	Trigger func(ConnectionStateChange) bool
}

// validate checks the capture options' bounds.
func (o *JournalCaptureOptions) validate() error {
	switch {
	case o.Size != 0 && (o.Size < MinJournalCaptureSize || o.Size > MaxJournalCaptureSize):
		return configErr("JournalCapture.Size", "must be 0 (the default) or between "+strconv.Itoa(MinJournalCaptureSize)+
			" and "+strconv.Itoa(MaxJournalCaptureSize))
	case o.BurstFailures > engine.MaxCaptureBurstFailures:
		return configErr("JournalCapture.BurstFailures", "must be at most "+strconv.Itoa(engine.MaxCaptureBurstFailures))
	case o.BurstWindow < 0 || o.BurstWindow > 24*time.Hour:
		return configErr("JournalCapture.BurstWindow", "must be between 0 (the default) and 24h")
	}
	return nil
}

// engineConfig returns the engine's capture configuration for o.
func (o *JournalCaptureOptions) engineConfig() engine.CaptureConfig {
	size := o.Size
	if size == 0 {
		size = DefaultJournalCaptureSize
	}
	c := engine.CaptureConfig{Size: size, BurstFailures: o.BurstFailures, BurstWindow: o.BurstWindow}
	if o.OnDump == nil {
		c.BurstFailures = -1
		return c
	}
	c.Exhaustion = !o.SkipExhaustion
	return c
}

// dumper hands triggered dumps to OnDump on its own goroutine, one at a time.
type dumper struct {
	fn   func(reason string, dump []byte)
	jobs chan dumpJob
	wg   sync.WaitGroup
	// mu orders offers before close, so that no offer sends on the closed channel.
	mu     sync.Mutex
	closed bool
}

type dumpJob struct {
	reason string
	data   []byte
	// take, when set, builds the dump first (a predicate's dump, taken through the loop).
	take func() ([]byte, error)
}

func newDumper(fn func(string, []byte)) *dumper {
	d := &dumper{fn: fn, jobs: make(chan dumpJob, 1)}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		for j := range d.jobs {
			if j.take != nil {
				data, err := j.take()
				if err != nil {
					continue
				}
				j.data = data
			}
			d.fn(j.reason, j.data)
		}
	}()
	return d
}

// offer queues j unless a dump is already waiting.
func (d *dumper) offer(j dumpJob) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	select {
	case d.jobs <- j:
	default:
	}
}

// close stops the goroutine after the queued dump and waits for it.
func (d *dumper) close() {
	d.mu.Lock()
	d.closed = true
	close(d.jobs)
	d.mu.Unlock()
	d.wg.Wait()
}

// setupCapture configures the engine's capture for c's options.
func (c *Client) setupCapture(ecfg *engine.Config, deps *engine.Deps) {
	jc := c.opts.JournalCapture
	if jc == nil {
		return
	}
	ecfg.Capture = jc.engineConfig()
	if jc.OnDump == nil {
		return
	}
	c.dumps = newDumper(jc.OnDump)
	deps.OnCapture = func(reason engine.CaptureReason, dump []byte, err error) {
		if err == nil {
			c.dumps.offer(dumpJob{reason: reason.String(), data: dump})
		}
	}
}

// observeCapture runs the capture predicate on an observation (the dispatcher goroutine).
func (c *Client) observeCapture(ch ConnectionStateChange) {
	jc := c.opts.JournalCapture
	if jc == nil || jc.Trigger == nil || c.dumps == nil || !jc.Trigger(ch) {
		return
	}
	c.dumps.offer(dumpJob{reason: engine.CapturePredicate.String(), take: func() ([]byte, error) {
		var b bytes.Buffer
		err := c.eng.DumpCapture(&b, engine.CapturePredicate)
		return b.Bytes(), err
	}})
}

// DumpJournal writes the journal capture to w as JSON Lines (docs/capture.md): the
// configuration that rebuilds the client's state machines, a snapshot of them, and the last
// events with the effects each had. `respire-sim replay FILE` replays it. It fails with
// ErrJournalCaptureOff unless Options.JournalCapture is set. It may be called after Close: the
// capture then ends with the client's disposal.
func (c *Client) DumpJournal(w io.Writer) error {
	if c.opts.JournalCapture == nil {
		return ErrJournalCaptureOff
	}
	return c.eng.DumpCapture(w, engine.CaptureOnDemand)
}
