package wire

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
)

// redacted replaces a secret wherever respire prints a configuration or an error.
const redacted = "[redacted]"

// String describes the configuration without its password: "protocol=auto user=default
// password=[redacted] db=0 name=app lib=respire/1.0". An empty password prints as "none".
func (c HandshakeConfig) String() string {
	var b strings.Builder
	b.WriteString("protocol=")
	b.WriteString(c.Protocol.String())
	if c.Username != "" {
		b.WriteString(" user=")
		b.WriteString(c.Username)
	}
	b.WriteString(" password=")
	if c.Password != "" {
		b.WriteString(redacted)
	} else {
		b.WriteString("none")
	}
	b.WriteString(" db=")
	b.WriteString(strconv.Itoa(c.Database))
	if c.ClientName != "" {
		b.WriteString(" name=")
		b.WriteString(c.ClientName)
	}
	if c.LibraryName != "" {
		b.WriteString(" lib=")
		b.WriteString(c.LibraryName)
		if c.LibraryVersion != "" {
			b.WriteByte('/')
			b.WriteString(c.LibraryVersion)
		}
	}
	if c.ReadOnly {
		b.WriteString(" readonly")
	}
	return b.String()
}

// GoString makes %#v print the redacted form too.
func (c HandshakeConfig) GoString() string { return "wire.HandshakeConfig{" + c.String() + "}" }

// LogValue makes log/slog print the redacted form with every handler.
func (c HandshakeConfig) LogValue() slog.Value { return slog.StringValue(c.String()) }

// MarshalJSON encodes the configuration with its password redacted, so that a configuration dumped
// as JSON (a debug endpoint, a JSON log handler) never reveals it.
func (c HandshakeConfig) MarshalJSON() ([]byte, error) {
	password := ""
	if c.Password != "" {
		password = redacted
	}
	return json.Marshal(struct {
		Protocol       string `json:"protocol"`
		Username       string `json:"username,omitempty"`
		Password       string `json:"password,omitempty"`
		Database       int    `json:"database"`
		ClientName     string `json:"clientName,omitempty"`
		LibraryName    string `json:"libraryName,omitempty"`
		LibraryVersion string `json:"libraryVersion,omitempty"`
	}{c.Protocol.String(), c.Username, password, c.Database, c.ClientName, c.LibraryName, c.LibraryVersion})
}

// Format makes every fmt verb, flag and width print the redacted form.
func (c HandshakeConfig) Format(f fmt.State, verb rune) { FormatRedacted(f, verb, c.String()) }

// String describes the handshake without its password.
func (h *Handshake) String() string { return "wire.Handshake{" + h.cfg.String() + "}" }

// GoString makes %#v print the redacted form too.
func (h *Handshake) GoString() string { return h.String() }

// Format makes every fmt verb, flag and width print the redacted form.
func (h *Handshake) Format(f fmt.State, verb rune) { FormatRedacted(f, verb, h.String()) }

// LogValue makes log/slog print the redacted form with every handler.
func (h *Handshake) LogValue() slog.Value { return slog.StringValue(h.String()) }

// MarshalJSON encodes the handshake's configuration, its password redacted.
func (h *Handshake) MarshalJSON() ([]byte, error) { return h.cfg.MarshalJSON() }

// FormatRedacted prints text, a redacted form, for any verb: %v, %+v, %#v and %s print it, %q
// quotes it and %x hex-encodes it, all with the flags, width and precision given; any other verb
// prints it as %s would.
func FormatRedacted(f fmt.State, verb rune, text string) {
	switch verb {
	case 'q', 'x', 'X', 's':
	default:
		verb = 's'
	}
	fmt.Fprintf(f, fmt.FormatString(f, verb), text)
}

// RedactReply returns the text of an error reply ("CODE message") fit to appear in an error: what
// the server echoed of the request is removed, so that neither keys, values nor credentials are
// printed, and the code (the first word) is kept exactly as the server sent it.
//
//   - Redis's echo of the arguments of an unknown command (", with args beginning with: 'k' 'v'")
//     is cut, whatever its letter case and however short the server truncated it.
//   - Quoted text ('...' or `...`) is an echoed argument unless it names command (its first word,
//     the whole name, or Redis's "first|second" form): the first quoted argument and everything up
//     to the last closing quote become '[redacted]'; an unterminated quote is redacted to the end.
//     Apostrophes inside words ("can't") are not quotes.
//   - When secret is not empty and the message still contains it as a whole word, ignoring case
//     (a proxy that echoes the request in its own words), the message is withheld and only the
//     code remains, unless the message is one of Redis's fixed handshake texts.
//
// A few fixed Redis texts whose quotes are Redis's own are kept as they are. The secret is never
// searched for as a substring: a password such as "WRONG" or "a" leaves WRONGPASS and its message
// intact.
func RedactReply(reply, command, secret string) string {
	code, body, hasBody := strings.Cut(reply, " ")
	if !hasBody || fixedReplies[reply] {
		return reply
	}
	body, shape := stripEcho(body, command)
	out := code
	if body != "" {
		out = code + " " + body
	}
	if secret != "" && !standardReplies[code+" "+shape] && containsWord(strings.ReplaceAll(shape, commandPlaceholder, " "), secret) {
		return code + " (message withheld: it may contain the credentials)"
	}
	return out
}

// fixedReplies are Redis 7.0 error texts that echo nothing of the request (their quotes are
// Redis's own), printed as they are.
var fixedReplies = map[string]bool{
	"MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.": true,
}

// standardReplies are fixed Redis 7.0 texts that a handshake can receive, after stripEcho, with
// the quoted command name written commandPlaceholder. They are printed even when the password
// happens to be one of their words, which withholding would otherwise reveal.
var standardReplies = map[string]bool{
	"ERR unknown command " + commandPlaceholder:                                                            true,
	"ERR wrong number of arguments for " + commandPlaceholder + " command":                                 true,
	"NOPERM this user has no permissions to run the " + commandPlaceholder + " command":                    true,
	"ERR unknown subcommand '" + redacted + "'. Try CLIENT HELP.":                                          true,
	"ERR unknown subcommand or wrong number of arguments for " + commandPlaceholder + ". Try CLIENT HELP.": true,
	"WRONGPASS invalid username-password pair or user is disabled.":                                        true,
	"NOAUTH Authentication required.":                                                                      true,
	"NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> " +
		"<pass> option can be used to authenticate the client and select the RESP protocol version at the same time": true,
	"NOPROTO unsupported protocol version": true,
	"ERR AUTH <password> called without any password configured for the default user. Are you sure your " +
		"configuration is correct?": true,
	"ERR DB index is out of range":                                            true,
	"ERR max number of clients reached":                                       true,
	"LOADING Redis is loading the dataset in memory":                          true,
	"ERR Client names cannot contain spaces, newlines or special characters.": true,
	"ERR Protocol version is not an integer or out of range":                  true,
	"ERR invalid password":                                                    true,
}

// argsMarker introduces the arguments Redis echoes after an unknown command (compared in lower
// case).
const argsMarker = "with args beginning with"

// commandPlaceholder stands for a quoted command name in the shape of a message.
const commandPlaceholder = "'%c'"

// stripEcho removes the echoed arguments from body (an error message after its code). It returns
// the printable body and its shape: the same text with each quoted command name replaced by
// commandPlaceholder.
func stripEcho(body, command string) (printable, shape string) {
	if i := indexFold(body, argsMarker); i >= 0 {
		body = strings.TrimRight(body[:i], " ,;:")
	}
	var out, chk strings.Builder
	for i := 0; i < len(body); {
		c := body[i]
		if (c != '\'' && c != '`') || (i > 0 && isWordByte(body[i-1])) {
			out.WriteByte(c)
			chk.WriteByte(c)
			i++
			continue
		}
		end := closingQuote(body, i+1, c)
		if end >= 0 && isCommandWord(body[i+1:end], command) {
			out.WriteString(body[i : end+1])
			chk.WriteString(commandPlaceholder)
			i = end + 1
			continue
		}
		// An echoed argument: redact through the last closing quote, so that nothing between
		// quotes that might pair differently than they seem escapes.
		last := -1
		for j := len(body) - 1; j > i; j-- {
			if (body[j] == '\'' || body[j] == '`') && (j+1 == len(body) || !isWordByte(body[j+1])) {
				last = j
				break
			}
		}
		out.WriteString("'" + redacted + "'")
		chk.WriteString("'" + redacted + "'")
		if last < 0 {
			break
		}
		i = last + 1
	}
	return out.String(), chk.String()
}

// closingQuote returns the index of the quote q that closes a quotation opened before from: one
// not followed by a letter or digit. It returns -1 when there is none.
func closingQuote(s string, from int, q byte) int {
	for j := from; j < len(s); j++ {
		if s[j] == q && (j+1 == len(s) || !isWordByte(s[j+1])) {
			return j
		}
	}
	return -1
}

// isCommandWord reports whether quoted text names command: its first word or the whole name
// (ignoring case), or Redis's "container|subcommand" form of either.
func isCommandWord(text, command string) bool {
	if text == "" || command == "" {
		return false
	}
	first, _, _ := strings.Cut(command, " ")
	if strings.EqualFold(text, first) || strings.EqualFold(strings.ReplaceAll(text, "|", " "), command) {
		return true
	}
	container, sub, ok := strings.Cut(text, "|")
	if !ok || !strings.EqualFold(container, first) || sub == "" {
		return false
	}
	for i := 0; i < len(sub); i++ {
		if c := sub[i]; !isLetterByte(c) && c != '-' && c != '_' {
			return false
		}
	}
	return true
}

// containsWord reports whether s contains word, ignoring case, with neither a letter nor a digit
// immediately before or after it.
func containsWord(s, word string) bool {
	for i := 0; i+len(word) <= len(s); i++ {
		if (i > 0 && isWordByte(s[i-1])) || !strings.EqualFold(s[i:i+len(word)], word) {
			continue
		}
		if end := i + len(word); end == len(s) || !isWordByte(s[end]) {
			return true
		}
	}
	return false
}

// indexFold is strings.Index ignoring ASCII case; sub must be lower case.
func indexFold(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return i
		}
	}
	return -1
}

func isLetterByte(c byte) bool { return (c|0x20) >= 'a' && (c|0x20) <= 'z' }

// isWordByte reports letters, digits and the bytes of multi-byte UTF-8 characters.
func isWordByte(c byte) bool { return isLetterByte(c) || (c >= '0' && c <= '9') || c >= 0x80 }
