// Package stream derives the simulator's random generators from a run's seed: one stream per
// component (the engine's draws, the network's jitter, the workload, the fault ranges, ...) and
// one generator per instance of it (a caller, a connection, a fault), so that a change in one
// component's consumption never shifts another's draws.
package stream

import "math/rand/v2"

// Stream identifiers.
const (
	Engine uint64 = iota + 1
	Network
	Workload
	Faults
	// Dedicated is the stream of the dedicated renters.
	Dedicated uint64 = 0x44
	// PubSub is the stream of the pub/sub workload (the publisher's think times).
	PubSub uint64 = 0x50
	// Vary is the stream of a scenario's varied fields (one instance per field, by its name).
	Vary uint64 = 0x56
	// Batches is the stream of the batchers (workload.batches).
	Batches uint64 = 0x42
)

// mix64 is the SplitMix64 finalizer: a bijective scrambling of 64 bits.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// New returns the generator of instance index of stream id, for the run's seed.
func New(seed, id, index uint64) *rand.PCG {
	p := new(rand.PCG)
	Init(p, seed, id, index)
	return p
}

// Init seeds an embedded generator as New does, without allocating.
func Init(p *rand.PCG, seed, id, index uint64) {
	p.Seed(mix64(seed^mix64(id)), mix64(index^(id<<56)^0x5851f42d4c957f2d))
}

// Unit returns a float64 drawn uniformly from [0, 1) from p.
func Unit(p *rand.PCG) float64 { return float64(p.Uint64()>>11) * (1.0 / (1 << 53)) }
