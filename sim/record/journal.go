package record

// JournalSink is a Sink that also takes the engine steps (the journal) in batches as the run
// records them, so that a run keeps at most a window of steps instead of its whole journal
// (sim.JournalWindow). The runner hands the steps over only for a scenario the sink accepted,
// and only when TakesJournal says so; the steps of a batch must not be kept: the runner reuses
// their memory.
type JournalSink interface {
	Sink
	// TakesJournal reports whether the sink, having accepted the run's scenario, takes its steps.
	TakesJournal() bool
	// Steps consumes steps, whose first is step base of the run (Result.StepBase counts the
	// steps handed over before); clients are the client generations begun so far.
	Steps(base int, steps []Step, clients []ClientGen)
}
