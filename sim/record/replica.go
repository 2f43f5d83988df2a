package record

import "github.com/respire-go/respire/fsm"

// CandidateStep is a step of a replica's engine in a run with replication (sim/replica.go):
// Candidate is the replica's candidate index (1 for the first replica; the primary's engine
// is the run's engine, whose steps are Result.Steps). The step's identifiers carry the
// candidate's offset, as a client generation's do.
type CandidateStep struct {
	Candidate int
	Step      Step
}

// RouterStep is a step of the read router (engine.ReplicaRouter) of a run with replication:
// the journaled event and the effects the router's machine returned.
type RouterStep struct {
	Event   fsm.RouterEvent
	Effects []fsm.RouterEffect
	// Gen is the router's generation: 0 for a standalone primary's one router; with replicas
	// named by the Sentinels, each replica set the client published has a router of its own,
	// numbered from 0 in order (Result.RouterConfigs).
	Gen int
}

// CandidateGenBase is the generation the runner gives replica k's engine, plus k: a run with
// replication keeps the candidates' identifiers apart as it keeps client generations apart
// (GenOffset), and has no other generation.
const CandidateGenBase = 128

// CandidateOf returns the read candidate whose engine opened connection conn in a run with
// replication: 0 for the primary's engine, k for replica k.
func CandidateOf(conn fsm.ConnID) int {
	if g := int(uint64(conn)>>GenShift) & 0xff; g >= CandidateGenBase {
		return g - CandidateGenBase
	}
	return 0
}
