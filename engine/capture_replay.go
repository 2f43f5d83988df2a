package engine

import (
	"encoding/json"
	"errors"
	"io"
	"strconv"

	"github.com/respire-go/respire/fsm"
)

// ErrCaptureFormat reports a file that is not a journal capture, or a damaged one. The errors
// of ReadCapture are *CaptureFormatError values that match it.
var ErrCaptureFormat = errors.New("respire: not a journal capture")

// CaptureFormatError reports what is wrong with a capture file; it matches ErrCaptureFormat.
type CaptureFormatError struct {
	// Reason says what is wrong, and where.
	Reason string
	// Err is the underlying decoding error, or nil.
	Err error
}

// Error implements error.
func (e *CaptureFormatError) Error() string {
	if e.Err != nil {
		return "respire: not a journal capture: " + e.Reason + ": " + e.Err.Error()
	}
	return "respire: not a journal capture: " + e.Reason
}

// Unwrap returns the underlying error.
func (e *CaptureFormatError) Unwrap() error { return e.Err }

// Is reports whether target is ErrCaptureFormat.
func (e *CaptureFormatError) Is(target error) bool { return target == ErrCaptureFormat }

func formatError(err error, reason string) error {
	return &CaptureFormatError{Reason: reason, Err: err}
}

// CaptureFile is a journal capture read back (ReadCapture).
type CaptureFile struct {
	// Header is the dump's first line.
	Header CaptureHeader
	// Snapshot is the machines' state before the first step, or nil when the capture starts at
	// the engine's first event.
	Snapshot []byte
	// Steps are the captured events with the effects they had, in order.
	Steps []CapturedStep
}

// CapturedStep is one captured event and the effects the machines gave it.
type CapturedStep struct {
	// Seq is the event's sequence number since the engine started.
	Seq uint64
	// Text is the event's description as the engine recorded it.
	Text string
	// Event is the event, ready to step.
	Event fsm.Event
	// Effects are the effects it had.
	Effects []CapturedEffect
}

// ReadCapture reads a dump written by Engine.DumpCapture. It accepts at most MaxCaptureSize
// steps.
func ReadCapture(r io.Reader) (*CaptureFile, error) {
	dec := json.NewDecoder(r)
	f := &CaptureFile{}
	if err := dec.Decode(&f.Header); err != nil {
		return nil, formatError(err, "reading the header")
	}
	if f.Header.Format != CaptureFormat {
		return nil, formatError(nil, "format "+strconv.Quote(f.Header.Format)+", want "+strconv.Quote(CaptureFormat))
	}
	for n := 0; ; n++ {
		var l captureLine
		err := dec.Decode(&l)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, formatError(err, "line "+strconv.Itoa(n+2))
		}
		if l.Snapshot != nil {
			if n != 0 || !f.Header.Snapshot {
				return nil, formatError(nil, "line "+strconv.Itoa(n+2)+": unexpected snapshot")
			}
			f.Snapshot = l.Snapshot
			continue
		}
		if len(f.Steps) == MaxCaptureSize {
			return nil, formatError(nil, "more than 16384 events")
		}
		st := CapturedStep{Seq: l.Seq, Text: l.Text, Effects: l.Effects}
		if err := decodeState(l.Event, &st.Event); err != nil {
			return nil, formatError(err, "line "+strconv.Itoa(n+2))
		}
		f.Steps = append(f.Steps, st)
	}
	if f.Header.Snapshot && f.Snapshot == nil {
		return nil, formatError(nil, "the snapshot is missing")
	}
	return f, nil
}

// Divergence is the first step whose replay differs from the capture.
type Divergence struct {
	// Index is the step's index in the capture (0 is the first captured event); Seq its
	// sequence number since the engine started.
	Index int
	Seq   uint64
	// Event is the step's event, as recorded.
	Event string
	// Machine is the machine whose effects differ first (or the event's machine).
	Machine string
	// Expected and Got are the recorded and the replayed effects of the step.
	Expected, Got []CapturedEffect
	// Detail says what differs first.
	Detail string
}

// Error describes the divergence.
func (d *Divergence) Error() string {
	return "respire: replay diverges at event " + strconv.Itoa(d.Index) + " (seq " + strconv.FormatUint(d.Seq, 10) +
		", machine " + d.Machine + ", " + d.Event + "): " + d.Detail
}

// Replay steps the capture into fresh machines (or machines restored from its snapshot) and
// compares every step's effects with the recorded ones. onStep, when set, sees each step with
// its replayed effects (reused by the next step). It returns the first divergence, or nil when
// every effect matches; an error means the capture could not be replayed at all.
func (f *CaptureFile) Replay(onStep func(i int, ev *fsm.Event, effects []fsm.Effect)) (*Divergence, error) {
	var r *Replayer
	var err error
	if f.Snapshot != nil {
		r, err = RestoreReplayer(f.Snapshot)
	} else {
		r, err = NewReplayer(f.Header.Config)
	}
	if err != nil {
		return nil, err
	}
	var first *Divergence
	for i := range f.Steps {
		st := &f.Steps[i]
		if i > 0 && st.Seq != f.Steps[i-1].Seq+1 && first == nil {
			first = &Divergence{Index: i, Seq: st.Seq, Event: st.Text, Machine: targetOf(&st.Event).String(),
				Detail: "sequence number " + strconv.FormatUint(st.Seq, 10) + " does not follow " + strconv.FormatUint(f.Steps[i-1].Seq, 10)}
		}
		ev := st.Event
		text := ev.String()
		effects := r.Step(&ev)
		if onStep != nil {
			onStep(i, &ev, effects)
		}
		if first != nil {
			continue
		}
		got := make([]CapturedEffect, len(effects))
		for j := range effects {
			got[j] = CapturedEffect{Machine: effects[j].Machine.String(), Text: effects[j].String()}
		}
		if d := compareStep(i, st, text, got); d != nil {
			first = d
		}
	}
	return first, nil
}

// compareStep returns the divergence of step i, replayed to got, or nil.
func compareStep(i int, st *CapturedStep, text string, got []CapturedEffect) *Divergence {
	d := &Divergence{Index: i, Seq: st.Seq, Event: st.Text, Machine: targetOf(&st.Event).String(),
		Expected: st.Effects, Got: got}
	if text != st.Text {
		d.Detail = "the event reads " + strconv.Quote(text) + " but was recorded as " + strconv.Quote(st.Text)
		return d
	}
	for j := 0; j < max(len(got), len(st.Effects)); j++ {
		switch {
		case j >= len(got):
			d.Machine = st.Effects[j].Machine
			d.Detail = "expected " + st.Effects[j].String() + ", got no effect"
		case j >= len(st.Effects):
			d.Machine = got[j].Machine
			d.Detail = "expected no effect, got " + got[j].String()
		case got[j] != st.Effects[j]:
			d.Machine = st.Effects[j].Machine
			d.Detail = "expected " + st.Effects[j].String() + ", got " + got[j].String()
		default:
			continue
		}
		return d
	}
	return nil
}
