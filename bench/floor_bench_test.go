package bench

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
)

// The batch floor: how fast a Go client could run the batch rows on this machine if it did
// nothing but pipelining. floorConn is not a client: one connection, one writer and one reader
// goroutine, callers' frames appended to one buffer and their replies paired in order, and
// nothing else (one caller writes and reads on its own goroutine): no timeouts, no reconnection, no error or redirect handling, no pooling rules, no
// typed results (a GET's value is checked in the read buffer, never copied). It answers whether a
// target stated against another client can be reached by any Go client at all, since respire,
// rueidis and go-redis all pay at least these costs (system calls, goroutine wake-ups, reading and
// pairing every reply).

// floorConn is the connection of the floor measurement.
type floorConn struct {
	nc net.Conn

	mu      sync.Mutex
	out     []byte        // frames waiting for the writer
	waiting []*floorBatch // batches whose frames were appended, in wire order, from head
	head    int
	wake    chan struct{} // the writer has frames to write (capacity 1)
	closed  bool
}

// floorBatch is one caller's batch: how many replies it waits for, and what they were.
type floorBatch struct {
	frames []byte
	want   int
	got    int
	bad    error
	done   chan struct{}
	get    bool // replies are 64-byte bulk strings (GET); otherwise +OK (SET)
}

func newFloorConn(addr string) (*floorConn, error) {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	c := &floorConn{nc: nc, wake: make(chan struct{}, 1)}
	go c.writeLoop()
	go c.readLoop()
	return c, nil
}

func (c *floorConn) close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	_ = c.nc.Close()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// run sends b's frames and waits for its replies.
func (c *floorConn) run(b *floorBatch) error {
	b.got, b.bad = 0, nil
	c.mu.Lock()
	c.out = append(c.out, b.frames...)
	c.waiting = append(c.waiting, b)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	<-b.done
	return b.bad
}

func (c *floorConn) writeLoop() {
	var spare []byte
	for range c.wake {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return
		}
		buf := c.out
		c.out = spare[:0]
		c.mu.Unlock()
		if len(buf) == 0 {
			spare = buf
			continue
		}
		if _, err := c.nc.Write(buf); err != nil {
			return
		}
		spare = buf
	}
}

func (c *floorConn) readLoop() {
	var rd floorReader
	var cur *floorBatch
	for {
		for {
			if cur == nil {
				c.mu.Lock()
				if c.head < len(c.waiting) {
					cur = c.waiting[c.head]
					if c.head++; c.head == len(c.waiting) {
						c.waiting, c.head = c.waiting[:0], 0
					}
				}
				c.mu.Unlock()
				if cur == nil {
					break
				}
			}
			if !rd.pair(cur) {
				break
			}
			cur.done <- struct{}{}
			cur = nil
		}
		if err := rd.fill(c.nc); err != nil {
			return
		}
	}
}

// floorReader reads replies into its buffer and checks them against their batch.
type floorReader struct {
	buf  []byte
	r, w int
}

// pair checks the whole replies in the buffer against b until b has all of its replies (it
// reports true) or the buffer holds no whole reply more (false).
func (rd *floorReader) pair(b *floorBatch) bool {
	for b.got < b.want {
		line := bytes.IndexByte(rd.buf[rd.r:rd.w], '\n')
		if line < 0 {
			return false
		}
		r, end := rd.r, rd.r+line+1
		if rd.buf[r] == '$' {
			n, err := strconv.Atoi(string(rd.buf[r+1 : end-2]))
			if err != nil {
				b.bad = err
			} else if n >= 0 {
				if rd.w < end+n+2 {
					return false
				}
				end += n + 2
			}
		}
		switch {
		case b.get && end-r != valueBytes+len("$64\r\n\r\n"):
			b.bad = errors.New("floor: unexpected GET reply")
		case !b.get && string(rd.buf[r:end]) != "+OK\r\n":
			b.bad = errors.New("floor: unexpected SET reply")
		}
		rd.r = end
		b.got++
	}
	return true
}

// fill reads more bytes from nc.
func (rd *floorReader) fill(nc net.Conn) error {
	if rd.buf == nil {
		rd.buf = make([]byte, 64<<10)
	}
	if rd.r == rd.w {
		rd.r, rd.w = 0, 0
	} else if rd.r > len(rd.buf)/2 {
		rd.w = copy(rd.buf, rd.buf[rd.r:rd.w])
		rd.r = 0
	}
	n, err := nc.Read(rd.buf[rd.w:])
	if err != nil {
		if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
			fmt.Println("floor:", err)
		}
		return err
	}
	rd.w += n
	return nil
}

// floorSync is the floor of one caller: it writes its batch and reads the replies itself, on
// its own goroutine, with no other goroutine involved.
type floorSync struct {
	nc net.Conn
	rd floorReader
}

func (c *floorSync) run(b *floorBatch) error {
	b.got, b.bad = 0, nil
	if _, err := c.nc.Write(b.frames); err != nil {
		return err
	}
	for !c.rd.pair(b) {
		if err := c.rd.fill(c.nc); err != nil {
			return err
		}
	}
	return b.bad
}

// floorFrames encodes batchLen GETs (set: SETs of value) of keys[first:].
func floorFrames(first int, set bool) []byte {
	var out []byte
	for _, k := range keys[first : first+batchLen] {
		if set {
			out = fmt.Appendf(out, "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(k), k, len(value), value)
		} else {
			out = fmt.Appendf(out, "*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n", len(k), k)
		}
	}
	return out
}

// BenchmarkBatchFloor runs the batch rows of BenchmarkClients (BATCHGET100, BATCHSET100 at 1 and
// 64 callers, the same keys and values) on floorConn. A caller's frames are encoded before the
// measurement: the floor leaves out encoding too.
func BenchmarkBatchFloor(b *testing.B) {
	for _, set := range []bool{false, true} {
		name := "BATCHGET100"
		if set {
			name = "BATCHSET100"
		}
		b.Run(name, func(b *testing.B) {
			for _, callers := range []int{1, 64} {
				b.Run("callers="+strconv.Itoa(callers)+"/client=floor", func(b *testing.B) {
					openAll(b) // the server seeded as for the clients
					var run func(*floorBatch) error
					if callers == 1 {
						nc, err := net.Dial("tcp", benchAddr)
						if err != nil {
							b.Fatal(err)
						}
						b.Cleanup(func() { _ = nc.Close() })
						run = (&floorSync{nc: nc}).run
					} else {
						c, err := newFloorConn(benchAddr)
						if err != nil {
							b.Fatal(err)
						}
						b.Cleanup(c.close)
						run = c.run
					}
					measure(b, callers, func(caller int) func() error {
						frames := make([][]byte, 8)
						for i := range frames {
							frames[i] = floorFrames(((caller*97+i)*batchLen)%(keyCount-batchLen), set)
						}
						fb := &floorBatch{want: batchLen, get: !set, done: make(chan struct{}, 1)}
						i := 0
						return func() error {
							i++
							fb.frames = frames[i%len(frames)]
							return run(fb)
						}
					})
				})
			}
		})
	}
}
