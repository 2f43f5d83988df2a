package config

import (
	"time"

	"github.com/respire-go/respire/engine"
)

// SentinelConfig is the engine's Sentinel configuration of a Sentinel client (the client's
// Options.SentinelPrimaryName, a simulated Sentinel topology): the Sentinels, which the caller
// checked, the primary's name, and each discovery query bounded by the command timeout
// (engine.DefaultSentinelQueryTimeout when the command timeout is disabled, or longer than
// engine.MaxSentinelQueryTimeout). Both runtimes resolve it with this code.
func SentinelConfig(commandTimeout time.Duration, sentinels []engine.Endpoint, primaryName string) *engine.SentinelConfig {
	sc := &engine.SentinelConfig{Sentinels: append([]engine.Endpoint(nil), sentinels...), PrimaryName: primaryName}
	if commandTimeout > 0 && commandTimeout <= engine.MaxSentinelQueryTimeout {
		sc.QueryTimeout = commandTimeout
	}
	return sc
}

// SentinelEngine returns the engine configuration of a Sentinel client with its Sentinels and
// primary name: a copy of Engine with SentinelConfig's configuration for the resolved command
// timeout.
func (r *Resolved) SentinelEngine(sentinels []engine.Endpoint, primaryName string) engine.Config {
	cfg := r.Engine
	cfg.Sentinel = SentinelConfig(r.Options.CommandTimeout, sentinels, primaryName)
	return cfg
}
