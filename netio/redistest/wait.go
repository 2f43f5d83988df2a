package redistest

import "time"

// pollTimeout bounds one command sent while polling a condition, so that a
// paused or dead node cannot stall the poll.
const pollTimeout = 2 * time.Second

// waitUntil polls cond every interval until it reports done or timeout
// passes. It returns the last status cond reported, for failure messages.
func waitUntil(timeout, interval time.Duration, cond func() (done bool, status string)) (string, bool) {
	deadline := time.Now().Add(timeout)
	for {
		done, status := cond()
		if done {
			return status, true
		}
		if time.Now().After(deadline) {
			return status, false
		}
		time.Sleep(interval)
	}
}
