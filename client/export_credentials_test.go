package client

import "strings"

// JournalText returns the client's event journal, one event per line. Call it after Close.
func JournalText(c *Client) string {
	var b strings.Builder
	for _, ev := range c.eng.Journal().Events() {
		b.WriteString(ev.String())
		b.WriteByte('\n')
	}
	return b.String()
}
