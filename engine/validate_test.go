package engine

import (
	"errors"
	"testing"
	"time"

	"github.com/respire-go/respire/fsm"
)

// TestConfigValidate: Config.Validate refuses what the machines' constructors refuse, naming the
// field, and every configuration it accepts builds the four machines.
func TestConfigValidate(t *testing.T) {
	bad := []struct {
		cfg   Config
		field string
	}{
		{Config{}, "Slots"},
		{Config{Slots: 1, MaxWaiters: -1}, "MaxWaiters"},
		{Config{Slots: 1, Lifetime: -1}, "Lifetime"},
		{Config{Slots: 1, Lifetime: time.Second, LifetimeJitter: -1}, "LifetimeJitter"},
		{Config{Slots: 1, LifetimeJitter: time.Second}, "LifetimeJitter"},
		{Config{Slots: 1, Pool: fsm.PoolConfig{MinimumSize: -1}}, "Pool.MinimumSize"},
		{Config{Slots: 1, Pool: fsm.PoolConfig{MaximumSize: -1}}, "Pool.MaximumSize"},
		{Config{Slots: 1, Pool: fsm.PoolConfig{MaximumIdle: -1}}, "Pool.MaximumIdle"},
		{Config{Slots: 1, Pool: fsm.PoolConfig{IdleTimeout: -1}}, "Pool.IdleTimeout"},
		{Config{Slots: 1, Policy: &fsm.Policy{JitterRatio: 2}}, "Policy.JitterRatio"},
	}
	for _, tc := range bad {
		err := tc.cfg.Validate()
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("%+v: Validate = %v, want a *ConfigError on %s", tc.cfg, err, tc.field)
		}
	}
	var pe *fsm.PolicyError
	if err := (Config{Slots: 1, Policy: &fsm.Policy{JitterRatio: 2}}).Validate(); !errors.As(err, &pe) {
		t.Errorf("an invalid policy's error does not unwrap to *fsm.PolicyError: %v", err)
	}
	for _, slots := range []int{1, 4} {
		for _, lifetime := range []time.Duration{0, time.Minute} {
			for _, jitter := range []time.Duration{0, time.Second} {
				for _, policy := range []*fsm.Policy{nil, {InitialDelay: time.Second, MaxAttempts: 3}} {
					cfg := Config{Slots: slots, Lifetime: lifetime, LifetimeJitter: jitter, Policy: policy,
						Pool: fsm.PoolConfig{MaximumIdle: 4, IdleTimeout: time.Minute}}
					if cfg.Validate() != nil {
						continue
					}
					func() {
						defer func() {
							if r := recover(); r != nil {
								t.Errorf("%+v passes Validate, but the machines refuse it: %v", cfg, r)
							}
						}()
						newMachines(cfg)
					}()
				}
			}
		}
	}
}
