package sim

import "time"

// PushFault makes a node send unsolicited RESP3 pushes on its target's connections for its
// window, one every Every on each connection that speaks RESP3 (a RESP2 connection has no such
// frame): out-of-band notices such as the invalidations of client-side caching, which arrive
// between replies. A client must never take one for a command's reply (DESIGN checker 4:
// pushes never complete commands).
type PushFault struct {
	Target `yaml:",inline"`
	// For is the window's length; omitted means until the end of the run.
	For *TimeRange `yaml:"for,omitempty"`
	// Every is the interval between two pushes on a connection (positive).
	Every TimeRange `yaml:"every"`
}

// validatePush checks a push fault.
func (sc *Scenario) validatePush(field string, f *PushFault) error {
	if err := sc.validateTarget(field, &f.Target, true); err != nil {
		return err
	}
	if err := validateSpan(field+".every", &f.Every, true); err != nil {
		return err
	}
	if f.Every.Min < time.Millisecond {
		return fieldErr(field+".every", "must be at least 1ms")
	}
	if f.For != nil {
		return validateSpan(field+".for", f.For, true)
	}
	return nil
}

func (f *PushFault) clone() *PushFault {
	if f == nil {
		return nil
	}
	return &PushFault{Target: f.Target.clone(), For: clonePtr(f.For), Every: f.Every}
}

// pushFrame is the push a push fault sends: a client-side caching invalidation of key "k0".
var pushFrame = []byte(">2\r\n$10\r\ninvalidate\r\n*1\r\n$2\r\nk0\r\n")

// faultTick is the event of a push fault's next pushes.
const faultTick uint64 = 3

// pushTick sends one push on every RESP3 connection of the fault's target whose handshake is
// done, then schedules the next tick while the fault lasts. A paused or dead node sends nothing.
func (fs *faultState) pushTick() bool {
	if fs.ended {
		return false
	}
	w := fs.w
	sent := 0
	for _, c := range fs.targets() {
		n := c.node
		if n == nil || n.paused || n.down || !c.srvOpen || !c.srv.authed || c.srv.proto != 3 {
			continue
		}
		c.down.write(pushFrame)
		sent++
	}
	if sent > 0 {
		b := w.tr.begin()
		b = append(b, "fault push"...)
		b = appendField(b, "fault", uint64(fs.idx))
		b = appendIntField(b, "conns", int64(sent))
		w.tr.end(b)
	}
	w.k.after(fs.extra, fs, faultTick)
	return sent > 0
}
