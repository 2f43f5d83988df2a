package scenario

// Plants of the maintenance checkers (sim/check/maint.go): each makes the simulated runtime do
// what a buggy client would, so that a maintenance scenario proves its checker catches it.
const (
	// PlantMaintIgnoreRelaxation makes the simulated callers time out at their own deadline,
	// ignoring their connection's relaxation. Caught by maint-relaxed-deadlines.
	PlantMaintIgnoreRelaxation Plant = "maint-ignore-relaxation"
	// PlantMaintLateClose ignores the engine's close of a connection that received MOVING: it
	// keeps draining past the grace. Caught by maint-drain-budget.
	PlantMaintLateClose Plant = "maint-late-close"
	// PlantMaintResendMoving resends, when a connection that received MOVING is closed, its
	// oldest unanswered command on its slot's newest connection. Caught by maint-no-replay.
	PlantMaintResendMoving Plant = "maint-resend-moving"
)

// Checkers of the maintenance timeline (sim/check/maint.go), selected for every scenario with one.
const (
	CheckMaintRelaxed  = "maint-relaxed-deadlines"
	CheckMaintDrain    = "maint-drain-budget"
	CheckMaintNoReplay = "maint-no-replay"
)

func init() {
	knownPlants = append(knownPlants, PlantMaintIgnoreRelaxation, PlantMaintLateClose, PlantMaintResendMoving)
	CheckerNames = append(CheckerNames, CheckMaintRelaxed, CheckMaintDrain, CheckMaintNoReplay)
}
