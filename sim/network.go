package sim

import (
	"time"

	"github.com/respire-go/respire/sim/stream"
)

// Control marks of a chunk: plain bytes, an orderly close (FIN), or a reset (RST).
const (
	ctlData uint8 = iota
	ctlEOF
	ctlRST
)

// chunk is one write in flight on a pipe: the bytes up to stream offset end, or a control mark.
type chunk struct {
	at  time.Duration
	end uint64
	ctl uint8
}

// pipe is one direction of a simulated connection: a byte stream with latency, delivered in order.
// Bytes really travel: the writer appends them, and after the latency they become readable by the
// other side, which parses them itself.
//
// data holds the stream from offset base: data[:rd] was consumed by the receiver, data[rd:ready]
// was delivered and awaits parsing, data[ready:] is in flight. One delivery event is outstanding
// at a time (for the first chunk in flight), which keeps delivery in order whatever the jitter.
type pipe struct {
	c      *simConn
	toNode bool
	data   []byte
	base   uint64
	rd     int
	ready  int
	chunks []chunk
	head   int
	// last is the arrival time of the last chunk written (arrivals never go backwards).
	last time.Duration
	// pending: a delivery event is scheduled; stalled: a black-hole holds the first chunk.
	pending, stalled bool
	// dead: the receiving end is gone; writes vanish.
	dead  bool
	epoch uint64
	// committed is the stream offset up to which bytes belong to chunks.
	committed uint64
}

// offset returns the stream offset of the next byte written.
func (p *pipe) offset() uint64 { return p.base + uint64(len(p.data)) }

// append adds bytes to the stream without sending them yet (see commit).
func (p *pipe) append(b []byte) {
	if p.dead {
		return
	}
	p.data = append(p.data, b...)
}

// commit sends the bytes appended since the last commit as one chunk, followed by a control mark
// if ctl is not ctlData.
func (p *pipe) commit(ctl uint8) {
	if p.dead {
		return
	}
	end := p.offset()
	if end == p.committed && ctl == ctlData {
		return
	}
	w := p.c.w
	at := w.k.now + p.c.oneWay()
	if at < p.last {
		at = p.last
	}
	p.last = at
	p.committed = end
	p.chunks = append(p.chunks, chunk{at: at, end: end, ctl: ctl})
	if !p.pending && !p.stalled {
		p.pending = true
		w.k.schedule(at, p, p.epoch)
	}
}

// write sends b as one chunk.
func (p *pipe) write(b []byte) {
	p.append(b)
	p.commit(ctlData)
}

// discard drops everything in flight (a reset loses unsent and unacknowledged data).
func (p *pipe) discard() {
	p.data = p.data[:p.ready]
	p.committed = p.offset()
	p.chunks = p.chunks[:0]
	p.head = 0
	p.epoch++
	p.pending = false
	p.stalled = false
}

// kill drops everything and makes further writes vanish: the receiver is gone.
func (p *pipe) kill() {
	p.discard()
	p.base += uint64(len(p.data))
	p.data = p.data[:0]
	p.rd, p.ready = 0, 0
	p.committed = p.base
	p.dead = true
}

// compact releases consumed bytes.
func (p *pipe) compact() {
	switch {
	case p.rd == len(p.data):
		p.base += uint64(p.rd)
		p.data = p.data[:0]
		p.rd, p.ready = 0, 0
	case p.rd > 4096 && p.rd > len(p.data)/2:
		n := copy(p.data, p.data[p.rd:])
		p.base += uint64(p.rd)
		p.data = p.data[:n]
		p.ready -= p.rd
		p.rd = 0
	}
}

// run delivers the first chunk in flight (arg is the epoch it was scheduled in).
func (p *pipe) Run(arg uint64) bool {
	if arg != p.epoch || !p.pending {
		return false
	}
	p.pending = false
	if p.head >= len(p.chunks) {
		return false
	}
	c := p.c
	w := c.w
	if w.holds(c, p.toNode) {
		// Half-open: nothing arrives until the black-hole heals (see heal).
		p.stalled = true
		return true
	}
	ch := p.chunks[p.head]
	p.head++
	if p.head == len(p.chunks) {
		p.chunks = p.chunks[:0]
		p.head = 0
	}
	if n := int(ch.end-p.base) - p.ready; n > 0 {
		if c.dropLimit > 0 && c.crossed+int64(n) >= c.dropLimit {
			// Deliver up to the limit, then cut the connection.
			part := int(c.dropLimit - c.crossed)
			c.crossed = c.dropLimit
			p.ready += part
			p.receive()
			c.triggerDrop()
			return true
		}
		c.crossed += int64(n)
		p.ready += n
		p.receive()
	}
	if ch.ctl != ctlData {
		p.control(ch.ctl)
	}
	p.scheduleNext()
	return true
}

// scheduleNext schedules the delivery of the next chunk in flight, if any.
func (p *pipe) scheduleNext() {
	if p.pending || p.stalled || p.head >= len(p.chunks) {
		return
	}
	at := p.chunks[p.head].at
	p.pending = true
	p.c.w.k.schedule(at, p, p.epoch)
}

// heal resumes a pipe held by a black-hole: the held chunks arrive one latency after the heal.
func (p *pipe) heal() {
	if !p.stalled {
		return
	}
	p.stalled = false
	if p.head >= len(p.chunks) {
		return
	}
	at := p.c.w.k.now + p.c.oneWay()
	p.last = max(p.last, at)
	p.pending = true
	p.c.w.k.schedule(at, p, p.epoch)
}

// receive hands delivered bytes to the receiving side.
func (p *pipe) receive() {
	if p.toNode {
		p.c.progressed() // bytes reached the node: a stalled write made progress
		if p.c.srv.Open() {
			p.c.node.Serve(&p.c.srv)
		}
		return
	}
	p.c.receive()
}

// control handles a control mark that reached the receiving side.
func (p *pipe) control(ctl uint8) {
	c := p.c
	if p.toNode {
		if c.srv.Open() {
			c.node.ClientClosed(&c.srv)
		}
		return
	}
	if ctl == ctlEOF {
		c.peerClosed(errEOF())
	} else {
		c.peerClosed(errReset())
	}
}

// oneWay returns the one-way latency of the next packet of c: base latency, seeded jitter, and
// any active delay fault.
func (c *simConn) oneWay() time.Duration {
	w := c.w
	d := w.latency
	if w.jitter > 0 {
		d += time.Duration(stream.Unit(&c.rng) * float64(w.jitter))
	}
	if len(w.active) > 0 {
		d += w.extraDelay(c)
	}
	if w.rep != nil {
		d += w.nodeLatency(c)
	}
	return d
}
