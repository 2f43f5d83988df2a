package client

import (
	"strings"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/fsm"
)

// ReplayJournal replays the journal of c, once closed, into fresh machines and returns the
// effects of the fence machine, one per line, and whether the journal was complete.
func ReplayJournal(c *Client) (string, bool) {
	j := c.eng.Journal()
	var b strings.Builder
	engine.Replay(c.eng.Config(), j.Events(), func(_ *fsm.Event, effects []fsm.Effect) {
		for i := range effects {
			if effects[i].Machine == fsm.MachineFence {
				b.WriteString(effects[i].String() + "\n")
			}
		}
	})
	return b.String(), j.Complete()
}
