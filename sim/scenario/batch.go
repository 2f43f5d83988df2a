package scenario

import "time"

// BatchWorkload describes the batchers (workload.batches): each sends one batch at a time on
// the command slots, as client.Client.Pipeline or Atomic does, waits for all its replies within
// one client.command_timeout budget from the batch's start (extended while the connection that
// took it is in a maintenance window), thinks, and repeats. A batch is Size INCRs of the
// batcher's own counter b<i>, pipelined, or wrapped in MULTI/EXEC (an atomic batch), drawn by
// the weights Pipeline and Atomic.
type BatchWorkload struct {
	// Batchers is the number of batchers (1 to MaxCallers).
	Batchers int `yaml:"batchers"`
	// Rate is the batchers' total batch rate (default 10/s).
	Rate Rate `yaml:"rate"`
	// Size is the number of INCRs in a batch (default 3; 1 to MaxBatchSize).
	Size int `yaml:"size"`
	// Pipeline and Atomic weigh the two kinds of batch: a pipeline (Client.Pipeline) or one
	// wrapped in MULTI/EXEC (Client.Atomic). Both zero: 50 each.
	Pipeline int `yaml:"pipeline,omitempty"`
	Atomic   int `yaml:"atomic,omitempty"`
	// Start is when the batchers start (each after a seeded stagger). Default 0.
	Start time.Duration `yaml:"start"`
	// Stop is when they stop starting batches. Default: the run's duration.
	Stop time.Duration `yaml:"stop"`
}

// MaxBatchSize bounds workload.batches.size.
const MaxBatchSize = 64

// applyBatchDefaults fills in the batch workload's defaults.
func (sc *Scenario) applyBatchDefaults() {
	b := sc.Workload.Batches
	if b == nil {
		return
	}
	if b.Rate == 0 {
		b.Rate = 10
	}
	if b.Size == 0 {
		b.Size = 3
	}
	if b.Pipeline == 0 && b.Atomic == 0 {
		b.Pipeline, b.Atomic = 50, 50
	}
	if b.Stop == 0 {
		b.Stop = sc.Duration
	}
}

// validateBatches checks workload.batches.
func (sc *Scenario) validateBatches() error {
	b := sc.Workload.Batches
	if b == nil {
		return nil
	}
	switch {
	case b.Batchers < 1 || b.Batchers > MaxCallers:
		return fieldErr("workload.batches.batchers", "must be from 1 to 100000")
	case b.Rate <= 0:
		return fieldErr("workload.batches.rate", "must be positive (such as 10/s)")
	case b.Size < 1 || b.Size > MaxBatchSize:
		return fieldErr("workload.batches.size", "must be from 1 to 64")
	case b.Pipeline < 0 || b.Pipeline > MaxWeight:
		return fieldErr("workload.batches.pipeline", "must be from 0 to 1000000")
	case b.Atomic < 0 || b.Atomic > MaxWeight:
		return fieldErr("workload.batches.atomic", "must be from 0 to 1000000")
	case b.Start < 0:
		return fieldErr("workload.batches.start", "must not be negative")
	case b.Stop <= b.Start:
		return fieldErr("workload.batches.stop", "must be after workload.batches.start")
	case b.Stop > sc.Duration:
		return fieldErr("workload.batches.stop", "must not be after the end of the run")
	}
	return nil
}
