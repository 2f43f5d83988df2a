package scenario

// PlantMaintNoticeAsMessage delivers a maintenance notice that a pub/sub connection received to
// the subscribers of one of its topics as a message, as a subscriber protocol that took every
// RESP3 push for a message would. Caught by pubsub-gaps: no node delivered that message.
const PlantMaintNoticeAsMessage Plant = "maint-notice-as-message"

func init() {
	knownPlants = append(knownPlants, PlantMaintNoticeAsMessage)
}
