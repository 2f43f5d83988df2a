package client

// PlantReplayOfUnknownOutcomes makes c send every command whose outcome is unknown once more:
// the defect the kill test must catch. Only tests call it.
func PlantReplayOfUnknownOutcomes(c *Client) { c.replayUnknown.Store(true) }
