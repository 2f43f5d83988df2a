package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// replyKind classifies a decoded RESP reply. RESP3 types are folded into the
// closest RESP2 kind, which is all the helpers need.
type replyKind int

const (
	kindSimple replyKind = iota // +OK, and RESP3 doubles and big numbers
	kindError                   // -ERR ..., and RESP3 blob errors
	kindInt                     // :42, and RESP3 booleans as 1/0
	kindBulk                    // $3 foo, and RESP3 verbatim strings
	kindNil                     // $-1, *-1, RESP3 _
	kindArray                   // *N, and RESP3 maps (flattened), sets, pushes
)

// reply is one decoded RESP value.
type reply struct {
	kind  replyKind
	str   string // simple, error and bulk payloads
	num   int64  // integers
	elems []reply
}

// isError reports whether r is an error reply.
func (r reply) isError() bool { return r.kind == kindError }

// String renders r the way Server.Do documents: strings as they are,
// integers in decimal, errors prefixed with "(error) ", nil as "(nil)", an
// empty array as "(empty array)" and the elements of other arrays (nested
// ones flattened) on separate lines.
func (r reply) String() string {
	switch r.kind {
	case kindError:
		return "(error) " + r.str
	case kindInt:
		return strconv.FormatInt(r.num, 10)
	case kindNil:
		return "(nil)"
	case kindArray:
		if len(r.elems) == 0 {
			return "(empty array)"
		}
		parts := make([]string, len(r.elems))
		for i, e := range r.elems {
			parts[i] = e.String()
		}
		return strings.Join(parts, "\n")
	default:
		return r.str
	}
}

// fields interprets an array of alternating names and values (as returned by
// SENTINEL MASTER and friends) as a map.
func (r reply) fields() map[string]string {
	m := make(map[string]string, len(r.elems)/2)
	for i := 0; i+1 < len(r.elems); i += 2 {
		m[r.elems[i].String()] = r.elems[i+1].String()
	}
	return m
}

// maxBulk bounds the payload sizes the reader accepts.
const maxBulk = 512 << 20

// readReply decodes one RESP2 or RESP3 value.
func readReply(r *bufio.Reader) (reply, error) {
	line, err := readLine(r)
	if err != nil {
		return reply{}, err
	}
	if line == "" {
		return reply{}, errors.New("protocol error: empty line")
	}
	body := line[1:]
	switch line[0] {
	case '+', ',', '(':
		return reply{kind: kindSimple, str: body}, nil
	case '-':
		return reply{kind: kindError, str: body}, nil
	case ':':
		n, err := strconv.ParseInt(body, 10, 64)
		if err != nil {
			return reply{}, fmt.Errorf("protocol error: bad integer %q", line)
		}
		return reply{kind: kindInt, num: n}, nil
	case '#':
		switch body {
		case "t":
			return reply{kind: kindInt, num: 1}, nil
		case "f":
			return reply{kind: kindInt, num: 0}, nil
		}
		return reply{}, fmt.Errorf("protocol error: bad boolean %q", line)
	case '_':
		return reply{kind: kindNil}, nil
	case '$', '=', '!':
		n, err := parseLength(line)
		if err != nil || n < 0 {
			return reply{kind: kindNil}, err
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return reply{}, err
		}
		if buf[n] != '\r' || buf[n+1] != '\n' {
			return reply{}, errors.New("protocol error: bulk string not terminated by CRLF")
		}
		s := string(buf[:n])
		switch line[0] {
		case '!':
			return reply{kind: kindError, str: s}, nil
		case '=':
			// Verbatim strings start with a three-letter format and a colon.
			if len(s) >= 4 && s[3] == ':' {
				s = s[4:]
			}
		}
		return reply{kind: kindBulk, str: s}, nil
	case '*', '~', '>', '%', '|':
		n, err := parseLength(line)
		if err != nil || n < 0 {
			return reply{kind: kindNil}, err
		}
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		elems := make([]reply, 0, min(n, 1024))
		for range n {
			e, err := readReply(r)
			if err != nil {
				return reply{}, err
			}
			elems = append(elems, e)
		}
		if line[0] == '|' {
			// Attributes annotate the value that follows them; drop them.
			return readReply(r)
		}
		return reply{kind: kindArray, elems: elems}, nil
	}
	return reply{}, fmt.Errorf("protocol error: unexpected type byte in %q", line)
}

func parseLength(line string) (int, error) {
	n, err := strconv.Atoi(line[1:])
	if err != nil || n > maxBulk {
		return 0, fmt.Errorf("protocol error: bad length in %q", line)
	}
	return n, nil
}

// readLine reads one CRLF-terminated line without the terminator.
func readLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return "", fmt.Errorf("protocol error: line %q not terminated by CRLF", line)
	}
	return line[:len(line)-2], nil
}

// writeCommand encodes args as a RESP array of bulk strings.
func writeCommand(w *bufio.Writer, args []string) error {
	fmt.Fprintf(w, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(w, "$%d\r\n%s\r\n", len(a), a)
	}
	return w.Flush()
}

// respConn is a minimal synchronous RESP connection.
type respConn struct {
	conn net.Conn
	r    *bufio.Reader
	w    *bufio.Writer
}

func newRESPConn(c net.Conn) *respConn {
	return &respConn{conn: c, r: bufio.NewReader(c), w: bufio.NewWriter(c)}
}

// do sends one command and reads its reply, within deadline.
func (c *respConn) do(deadline time.Time, args ...string) (reply, error) {
	if err := c.conn.SetDeadline(deadline); err != nil {
		return reply{}, err
	}
	if err := writeCommand(c.w, args); err != nil {
		return reply{}, err
	}
	return readReply(c.r)
}

func (c *respConn) Close() error { return c.conn.Close() }
