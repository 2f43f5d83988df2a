package engine

import (
	"bytes"
	"encoding/json"
	stderrors "errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/cockroachdb/errors"
	"github.com/respire-go/respire/fsm"
)

// CaptureFormat names the dump format, in every dump's header.
const CaptureFormat = "respire-capture/1"

// ErrCaptureOff reports a dump asked of an engine without a capture (CaptureConfig.Size zero).
var ErrCaptureOff = stderrors.New("respire: journal capture is not enabled")

// ErrCaptureUnavailable reports that the capture holds no replayable window: its snapshots
// failed, or one event had more effects than the effect ring holds.
var ErrCaptureUnavailable = stderrors.New("respire: the journal capture has no replayable window")

// CaptureHeader is the first line of a dump: what the capture is and the configuration that
// rebuilds the machines. It holds endpoints as addresses and the options that shape the
// machines, never credentials, keys or values.
type CaptureHeader struct {
	// Format is CaptureFormat.
	Format string `json:"format"`
	// Reason is why the dump was taken (a CaptureReason's name).
	Reason string `json:"reason"`
	// Config is the engine's configuration.
	Config Config `json:"config"`
	// First is the sequence number (since the engine started) of the dump's first event.
	First uint64 `json:"first"`
	// Events is the number of events in the dump.
	Events int `json:"events"`
	// Total is the number of events the engine had stepped when the dump was taken.
	Total uint64 `json:"total"`
	// Snapshot says whether a snapshot line follows (false: the dump starts at the first event,
	// and replay starts from fresh machines).
	Snapshot bool `json:"snapshot"`
	// Topics is the number of pub/sub channel names replaced by pseudonyms.
	Topics int `json:"topics"`
}

// CapturedEffect is one recorded effect: the machine that produced it and its description.
type CapturedEffect struct {
	// Machine is the producing machine's name.
	Machine string `json:"machine"`
	// Text is the effect's deterministic description (fsm.Effect.AppendTo).
	Text string `json:"text"`
}

// String returns "machine: text".
func (f CapturedEffect) String() string { return f.Machine + ": " + f.Text }

// captureLine is a dump line after the header: a snapshot or a step.
type captureLine struct {
	Snapshot json.RawMessage  `json:"snapshot,omitempty"`
	Seq      uint64           `json:"seq"`
	Text     string           `json:"text,omitempty"`
	Event    json.RawMessage  `json:"event,omitempty"`
	Effects  []CapturedEffect `json:"effects"`
}

// DumpCapture writes the capture as JSON Lines to w: a header (CaptureHeader), a snapshot of
// the machines when the dump does not start at the engine's first event, and one line per
// event with the effects it had. Pub/sub channel names are replaced by pseudonyms that keep
// their order, so the dump replays; keys, values and credentials never enter the machines.
// The dump is built on the event loop and written from the caller's goroutine, so the engine
// must have been started (Start); after it stopped, the dump is built on the caller's goroutine.
func (e *Engine) DumpCapture(w io.Writer, reason CaptureReason) error {
	if e.capture == nil {
		return ErrCaptureOff
	}
	type result struct {
		data []byte
		err  error
	}
	done := make(chan result, 1)
	e.post(item{call: func() {
		data, err := e.capture.dump(e.cfg, reason)
		done <- result{data, err}
	}})
	r := <-done
	if r.err != nil {
		return r.err
	}
	_, err := w.Write(r.data)
	return errors.Wrap(err, "respire: writing the journal capture")
}

// pseudonyms replaces pub/sub channel names with order-preserving stand-ins.
type pseudonyms struct {
	names map[string]string
	// quoted replaces the names inside error texts, longest first.
	quoted *strings.Replacer
}

// topic returns the pseudonym of name, or name itself when it has none (the empty name, and
// the channels the Sentinel monitor subscribes itself, which the machine names in its code).
func (p *pseudonyms) topic(name string) string {
	if alias, ok := p.names[name]; ok {
		return alias
	}
	return name
}

func (p *pseudonyms) errText(s string) string {
	if p.quoted == nil {
		return s
	}
	return p.quoted.Replace(s)
}

func newPseudonyms(seen map[string]bool) *pseudonyms {
	names := make([]string, 0, len(seen))
	for n := range seen {
		if n != "" && !slices.Contains(fsm.MonitorChannels[:], n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	width := max(4, len(fmt.Sprint(len(names))))
	p := &pseudonyms{names: make(map[string]string, len(names))}
	var pairs []string
	for i, n := range names {
		p.names[n] = fmt.Sprintf("topic-%0*d", width, i+1)
	}
	byLength := slices.Clone(names)
	slices.SortStableFunc(byLength, func(a, b string) int { return len(b) - len(a) })
	for _, n := range byLength {
		pairs = append(pairs, n, p.names[n])
	}
	if len(pairs) > 0 {
		p.quoted = strings.NewReplacer(pairs...)
	}
	return p
}

// redactEvent returns ev with its channel names and error text replaced, for its description.
func (p *pseudonyms) redactEvent(ev fsm.Event) fsm.Event {
	if ev.Err != nil {
		ev.Err = &CapturedError{Message: p.errText(ev.Err.Error())}
	}
	ev.Topic.Name = p.topic(ev.Topic.Name)
	if ev.Topics != nil {
		ts := make([]fsm.Topic, len(ev.Topics))
		for i, t := range ev.Topics {
			ts[i] = fsm.Topic{Kind: t.Kind, Name: p.topic(t.Name)}
		}
		ev.Topics = ts
	}
	return ev
}

// redactEffect returns f with its channel names and error texts replaced, for its description.
func (p *pseudonyms) redactEffect(f fsm.Effect) fsm.Effect {
	f.Topic.Name = p.topic(f.Topic.Name)
	if f.Topics != nil {
		ts := make([]fsm.Topic, len(f.Topics))
		for i, t := range f.Topics {
			ts[i] = fsm.Topic{Kind: t.Kind, Name: p.topic(t.Name)}
		}
		f.Topics = ts
	}
	if f.Err != nil {
		f.Err = &CapturedError{Message: p.errText(f.Err.Error())}
	}
	if f.Lifecycle.Err != nil {
		f.Lifecycle.Err = &CapturedError{Message: p.errText(f.Lifecycle.Err.Error())}
	}
	return f
}

// dump builds the dump of the capture's replayable window.
func (c *capture) dump(cfg Config, reason CaptureReason) ([]byte, error) {
	s := c.start()
	if s == nil {
		if c.snapErr != nil {
			return nil, errors.WithSecondaryError(ErrCaptureUnavailable, c.snapErr)
		}
		return nil, ErrCaptureUnavailable
	}
	var m *machines
	if !s.fresh {
		m = &machines{}
		if err := decodeState(s.data, m); err != nil {
			return nil, errors.Wrap(err, "respire: journal capture")
		}
	}
	// Collect the channel names, then write everything with their pseudonyms.
	seen := map[string]bool{}
	collect := func(n string) string { seen[n] = true; return n }
	var effects []fsm.Effect
	if m != nil {
		if _, err := encodeState(nil, m, collect, nil); err != nil {
			return nil, errors.Wrap(err, "respire: journal capture")
		}
	}
	for seq := s.seq; seq < c.seq; seq++ {
		ev, effs := c.at(seq, effects[:0])
		effects = effs
		if _, err := encodeState(nil, ev, collect, nil); err != nil {
			return nil, errors.Wrap(err, "respire: journal capture")
		}
		for i := range effs {
			collect(effs[i].Topic.Name)
			for _, t := range effs[i].Topics {
				collect(t.Name)
			}
		}
	}
	p := newPseudonyms(seen)
	h := CaptureHeader{Format: CaptureFormat, Reason: reason.String(), Config: cfg, First: s.seq,
		Events: int(c.seq - s.seq), Total: c.seq, Snapshot: !s.fresh, Topics: len(p.names)}
	h.Config.Capture = CaptureConfig{}
	var buf bytes.Buffer
	head, err := json.Marshal(h)
	if err != nil {
		return nil, errors.Wrap(err, "respire: journal capture")
	}
	buf.Write(head)
	buf.WriteByte('\n')
	if m != nil {
		state, err := encodeState(nil, m, p.topic, p.errText)
		if err != nil {
			return nil, errors.Wrap(err, "respire: journal capture")
		}
		line, _ := json.Marshal(captureLine{Snapshot: state, Seq: s.seq})
		buf.Write(line)
		buf.WriteByte('\n')
	}
	for seq := s.seq; seq < c.seq; seq++ {
		ev, effs := c.at(seq, effects[:0])
		effects = effs
		state, err := encodeState(nil, ev, p.topic, p.errText)
		if err != nil {
			return nil, errors.Wrap(err, "respire: journal capture")
		}
		l := captureLine{Seq: seq, Text: p.redactEvent(*ev).String(), Event: state, Effects: make([]CapturedEffect, len(effs))}
		for i := range effs {
			f := p.redactEffect(effs[i])
			l.Effects[i] = CapturedEffect{Machine: f.Machine.String(), Text: f.String()}
		}
		line, err := json.Marshal(l)
		if err != nil {
			return nil, errors.Wrap(err, "respire: journal capture")
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	return buf.Bytes(), nil
}
