package fsm

// SMIGRATED (spec "Maintenance notifications", Cluster slot migrations).
//
// A SlotsMigrated event says that the node at Event.Endpoint announced that the slots of each
// shard of Event.Reply now belong to that shard's node. The slot map takes a move only when it
// can trust it:
//
//   - the announcing node must still own every slot of the range in the map (a late or
//     repeated notice, or one about slots the map already gave to someone else, changes
//     nothing);
//   - the new owner must be a member the topology knows (its address alone says nothing about
//     its shard or replicas).
//
// A move taken moves its slots at once, as a MOVED redirect does for one slot. Every move that
// is not taken counts in respire.cluster.slot_migrations.skipped and asks for a (debounced)
// topology refresh; until it comes, MOVED redirects lead commands to the new owner.

// slotsMigrated applies an SMIGRATED notice (see above).
func (c *Cluster) slotsMigrated(ev *Event, out *Outbox) {
	if ev.Reply == nil {
		return
	}
	skipped := 0
	src, srcKnown := Node{}, false
	if c.known {
		src, srcKnown = c.topo.Lookup(ev.Endpoint)
	}
	for _, sh := range ev.Reply.Shards {
		if len(sh.Nodes) == 0 {
			continue
		}
		target, ok := Node{}, false
		if srcKnown {
			target, ok = c.topo.Lookup(sh.Nodes[0].Addr)
		}
		for _, rg := range sh.Ranges {
			if !ok || !c.owns(src.ID, rg) {
				skipped++
				continue
			}
			if target.ID == src.ID {
				continue // nothing moves
			}
			m := target
			m.Role, m.Primary = RolePrimary, ""
			r := TopologyReply{Query: QueryMoved, Shards: []ReplyShard{{Ranges: []SlotRange{rg}, Nodes: []Node{m}}}}
			if t, ch := c.topo.Apply(r); ch.Verdict != VerdictInconclusive {
				c.topo, c.dirty = t, true
				c.syncNodes(&ch, ev, out)
			} else {
				skipped++
			}
		}
	}
	if skipped > 0 {
		out.add(Effect{Kind: Record, Endpoint: ev.Endpoint,
			Metric: Metric{Instrument: InstrumentSlotMigrationsSkipped, Source: SourceCommand, Value: float64(skipped)}})
		c.ref.trigger(c, triggerMoved, ev, out)
	}
}

// owns reports whether node id owns every slot of rg in the slot map.
func (c *Cluster) owns(id NodeID, rg SlotRange) bool {
	for s := int(rg.First); s <= int(rg.Last); s++ {
		if owner, has := c.topo.Owner(uint16(s)); !has || owner.ID != id {
			return false
		}
	}
	return true
}
