package resp

import (
	"bytes"
	"strconv"
)

// ParseCommand decodes one command request from the start of buf, as a
// Redis server reads it, into *args and returns the number of bytes it
// occupied. Two forms are accepted:
//
//   - the multibulk form clients send, "*<n>\r\n" followed by n bulk
//     strings; "*0\r\n" and "*-1\r\n" are empty requests;
//   - the inline form typed by humans, a line such as "PING\r\n" or
//     "SET k v\n", split on runs of spaces and tabs (quotes are not
//     interpreted); a blank line is an empty request.
//
// An empty request sets *args to length zero and still consumes its
// bytes; servers skip it. The contract is that of Parse: ErrIncomplete
// with n == 0 when buf holds only a prefix of a request, *ProtocolError
// for malformed or oversized input (Limits.MaxElements caps the argument
// count, MaxBulkLen each argument, MaxLineLen an inline request and every
// header, MaxReplyLen the whole request), and *args untouched on error.
//
// Arguments are copied out of buf, so buf may be reused at once. Each
// argument is copied into the backing array that the slice at the same
// index of *args already has, when it is large enough, so re-parsing with
// the same *args allocates nothing in steady state. Consequently the
// slices in *args are overwritten by the next call with the same args:
// copy any argument that must outlive it (a stored key or value, say),
// and never place in *args a slice whose memory you still need.
func ParseCommand(buf []byte, args *[][]byte, lim *Limits) (n int, err error) {
	l := lim.resolve()
	if len(buf) == 0 {
		return 0, ErrIncomplete
	}
	if buf[0] != '*' {
		return parseInline(buf, args, &l)
	}
	cr, err := lineEnd(buf, 1, l.line)
	if err != nil {
		return 0, err
	}
	count, e := parseLen(buf[1:cr])
	if e != "" {
		return 0, malformed(1, "invalid argument count: "+e)
	}
	first := cr + 2
	if count <= 0 {
		*args = (*args)[:0]
		return first, nil
	}
	if count > int64(l.elems) {
		return 0, overLimit(1, "MaxElements", count, int64(l.elems))
	}
	// First pass: check the whole request is present and well formed.
	pos := first
	for range count {
		if pos >= len(buf) {
			return 0, ErrIncomplete
		}
		if buf[pos] != '$' {
			return 0, malformed(pos, "command argument is not a bulk string")
		}
		cr, err := lineEnd(buf, pos+1, l.line)
		if err != nil {
			return 0, err
		}
		size, e := parseLen(buf[pos+1 : cr])
		if e != "" || size < 0 {
			if e == "" {
				e = "null argument"
			}
			return 0, malformed(pos+1, "invalid argument length: "+e)
		}
		if size > int64(l.bulk) {
			return 0, overLimit(pos+1, "MaxBulkLen", size, int64(l.bulk))
		}
		data := cr + 2
		if int(size) > l.reply-data-2 {
			return 0, overLimit(pos, "MaxReplyLen", int64(data)+size+2, int64(l.reply))
		}
		if int(size) > len(buf)-data-2 {
			return 0, ErrIncomplete
		}
		end := data + int(size)
		if buf[end] != '\r' || buf[end+1] != '\n' {
			return 0, malformed(end, "argument not followed by CRLF")
		}
		pos = end + 2
	}
	// Second pass: copy the arguments.
	a := argSlots(*args, int(count))
	pos = first
	for i := range a {
		cr := findCR(buf, pos+1)
		size, _ := parseLen(buf[pos+1 : cr])
		data := cr + 2
		a[i] = append(a[i][:0], buf[data:data+int(size)]...)
		pos = data + int(size) + 2
	}
	*args = a
	return pos, nil
}

// argSlots returns args resized to n, keeping the backing arrays of the
// slots it already had (including those beyond its length) for reuse.
func argSlots(args [][]byte, n int) [][]byte {
	if cap(args) >= n {
		return args[:n]
	}
	grown := make([][]byte, n)
	copy(grown, args[:cap(args)])
	return grown
}

// parseInline handles a request that does not start with '*': one line
// ending in LF (optionally CR LF) split on spaces and tabs.
func parseInline(buf []byte, args *[][]byte, l *limits) (int, error) {
	window := buf
	if len(window) > l.line+2 {
		window = window[:l.line+2]
	}
	nl := bytes.IndexByte(window, '\n')
	if nl < 0 {
		if len(buf) >= l.line+2 {
			return 0, inlineTooLong(l.line)
		}
		return 0, ErrIncomplete
	}
	line := buf[:nl]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	if len(line) > l.line {
		return 0, inlineTooLong(l.line)
	}
	count := 0
	for i := 0; ; count++ {
		var start int
		if start, i = nextField(line, i); start == i {
			break
		}
	}
	if count > l.elems {
		return 0, overLimit(0, "MaxElements", int64(count), int64(l.elems))
	}
	a := argSlots(*args, count)
	for k, i := 0, 0; k < count; k++ {
		var start int
		start, i = nextField(line, i)
		a[k] = append(a[k][:0], line[start:i]...)
	}
	*args = a
	return nl + 1, nil
}

// nextField returns the bounds [start, end) of the first run of bytes
// other than space and tab in line[i:]; start == end when there is none.
func nextField(line []byte, i int) (start, end int) {
	for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
		i++
	}
	start = i
	for i < len(line) && line[i] != ' ' && line[i] != '\t' {
		i++
	}
	return start, i
}

func inlineTooLong(max int) error {
	return &ProtocolError{
		Reason: "MaxLineLen exceeded: inline request longer than " + strconv.Itoa(max) + " bytes",
		Limit:  "MaxLineLen",
	}
}
