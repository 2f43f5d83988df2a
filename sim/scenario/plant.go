package scenario

import "slices"

// Plant names a deliberate bug a scenario can plant, to prove that a checker catches it. Plants
// exist only for the checkers' positive controls; production code has no such switches.
type Plant string

// Plants.
const (
	// PlantReplayAccepted resends the oldest command that was written on a connection that then
	// failed, on the next connection of the same slot.
	PlantReplayAccepted Plant = "replay-accepted"
	// PlantLateTimers fires every timer at twice its delay.
	PlantLateTimers Plant = "late-timers"
	// PlantEarlyDial dials a slot again while its delay is still scheduled.
	PlantEarlyDial Plant = "early-dial"
	// PlantLoseReply completes one acknowledged command as ok without applying it.
	PlantLoseReply Plant = "ok-without-apply"
	// PlantStaleRead makes a node answer one GET with the key's previous value.
	PlantStaleRead Plant = "stale-read"
	// PlantDoubleComplete completes one command twice.
	PlantDoubleComplete Plant = "double-complete"
	// PlantEarlyCommand lets one application command reach a node before its handshake finished.
	PlantEarlyCommand Plant = "command-before-handshake"
	// PlantDeadAfterHeal refuses every connection for the rest of the run, even after heal.
	PlantDeadAfterHeal Plant = "dead-after-heal"
	// PlantRetryPermanent makes the simulated transport report a permanent failure of a
	// dedicated connection attempt (WRONGPASS, NOPERM...) as transient, so the rent retries it.
	PlantRetryPermanent Plant = "retry-permanent"
	// PlantReRent makes a renter whose rent failed or exhausted rent again for the same
	// operation, with a fresh budget.
	PlantReRent Plant = "re-rent"
	// PlantResendBlocking makes a renter whose blocking pop or EXEC was written on a connection
	// that failed send it again on a newly rented connection.
	PlantResendBlocking Plant = "resend-blocking"
	// PlantUseAfterReturn makes one renter write a command on the connection its previous
	// operation gave back, which the pool may have handed to someone else meanwhile.
	PlantUseAfterReturn Plant = "use-after-return"
	// PlantPubSubSkipGap releases the messages held at one resubscription without their gap
	// marker, as a runtime that ignored the machine's Gap effect would (caught by pubsub-gaps).
	PlantPubSubSkipGap Plant = "pubsub-skip-gap"
	// PlantPubSubLostUnsubscribe drops one UNSUBSCRIBE the machine asked for, leaving the server
	// with a subscription nobody wants (caught by pubsub-subscriptions).
	PlantPubSubLostUnsubscribe Plant = "pubsub-lost-unsubscribe"
	// PlantPubSubKeepAfterExhaustion ignores one exhaustion end, leaving that episode's
	// subscriptions open although their recovery gave up (caught by pubsub-exhaustion).
	PlantPubSubKeepAfterExhaustion Plant = "pubsub-keep-after-exhaustion"
	// PlantDialDeparted reports, beside every dial of the client after a Cluster node was
	// replaced, a dial to the replaced node's address: the incident's client, which kept
	// dialing departed nodes (caught by dials).
	PlantDialDeparted Plant = "dial-departed"
	// PlantSentinelSkipRoleCheck hands a Sentinel client's data connections to the engine
	// without their ROLE check, so a connection opened to the old primary after a failover
	// nobody announced carries writes to a replica (caught by replica-writes).
	PlantSentinelSkipRoleCheck Plant = "sentinel-skip-role-check"
)

// Plants in the code both runtimes share (netio/wire, the engine's caller logic and grant),
// switched on through internal/plant, which documents each bug: wrong decisions of production code
// that a control scenario in testdata catches. Unlike the simulator's own plants they act every
// time their situation arises.
const (
	PlantLateReplyToNextCaller Plant = "late-reply-to-next-caller" // caught by pairing
	PlantTimeoutKeepsPairing   Plant = "timeout-keeps-pairing"     // caught by pairing
	PlantPushCompletesCommand  Plant = "push-completes-command"    // caught by pairing
	PlantAckToWrongBatch       Plant = "ack-to-wrong-batch"        // caught by pubsub-subscriptions
	PlantSendWithdrawn         Plant = "send-withdrawn"            // caught by honest (runtime.loop_lag)
	PlantIgnoreCancel          Plant = "ignore-cancel"             // caught by outcomes
	PlantRecycleBeforeReply    Plant = "recycle-before-reply"      // caught by pairing and outcomes
	PlantSentinelRedialAtOnce  Plant = "sentinel-redial-at-once"   // caught by expect-dial-rate
	PlantFenceSkipKill         Plant = "fence-skip-kill"           // caught by fence
)

// knownPlants lists the plants the simulator implements.
var knownPlants = []Plant{PlantReplayAccepted, PlantLateTimers, PlantEarlyDial, PlantLoseReply,
	PlantStaleRead, PlantDoubleComplete, PlantEarlyCommand, PlantDeadAfterHeal,
	PlantRetryPermanent, PlantReRent, PlantResendBlocking, PlantUseAfterReturn,
	PlantPubSubSkipGap, PlantPubSubLostUnsubscribe, PlantPubSubKeepAfterExhaustion, PlantDialDeparted,
	PlantLateReplyToNextCaller, PlantTimeoutKeepsPairing, PlantPushCompletesCommand, PlantAckToWrongBatch,
	PlantSendWithdrawn, PlantIgnoreCancel, PlantRecycleBeforeReply, PlantSentinelRedialAtOnce,
	PlantSentinelSkipRoleCheck, PlantFenceSkipKill}

// Planted reports whether the scenario plants p.
func (sc *Scenario) Planted(p Plant) bool { return slices.Contains(sc.Plant, p) }
