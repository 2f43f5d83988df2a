package netio

// multipathPlan is how a built-in TCP dial treats Multipath TCP.
type multipathPlan uint8

const (
	// multipathOff: not requested; an ordinary TCP dial.
	multipathOff multipathPlan = iota
	// multipathOn: requested and available; the dial asks for IPPROTO_MPTCP.
	multipathOn
	// multipathFallback: requested but unavailable; an ordinary TCP dial, reported as a fallback.
	multipathFallback
)

// planMultipath decides a built-in TCP dial's use of Multipath TCP. Unix sockets and custom dial
// hooks never reach it: they ignore the option and report no fallback. available is consulted
// only when MPTCP is requested.
func planMultipath(requested bool, available func() bool) multipathPlan {
	switch {
	case !requested:
		return multipathOff
	case available():
		return multipathOn
	}
	return multipathFallback
}

// MultipathTCPAvailable reports whether this host can open Multipath TCP sockets. On Linux it
// creates one IPPROTO_MPTCP socket, once per process: EPROTONOSUPPORT, EINVAL or ENOPROTOOPT (a
// kernel built without CONFIG_MPTCP, or net.mptcp.enabled=0) mean no; success means yes; any
// other error (out of descriptors, say) is not evidence against support and leaves the decision
// to the dial. On other platforms it reports false.
func MultipathTCPAvailable() bool { return multipathAvailable() }
