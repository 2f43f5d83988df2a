package fsm

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	bad := &Policy{MaxAttempts: -1}
	cases := []struct {
		name   string
		err    error
		config string
		field  string
	}{
		{"mux ok", (&MuxConfig{Slots: 1}).Validate(), "", ""},
		{"mux max slots", (&MuxConfig{Slots: MaxSlots, IDBase: IDBase(MachinePool), Lifetime: time.Minute, LifetimeJitter: time.Second}).Validate(), "", ""},
		{"mux no slot", (&MuxConfig{}).Validate(), "MuxConfig", "Slots"},
		{"mux too many slots", (&MuxConfig{Slots: MaxSlots + 1}).Validate(), "MuxConfig", "Slots"},
		{"mux negative waiters", (&MuxConfig{Slots: 1, MaxWaiters: -1}).Validate(), "MuxConfig", "MaxWaiters"},
		{"mux id base", (&MuxConfig{Slots: 1, IDBase: 1000}).Validate(), "MuxConfig", "IDBase"},
		{"mux negative lifetime", (&MuxConfig{Slots: 1, Lifetime: -1}).Validate(), "MuxConfig", "Lifetime"},
		{"mux negative jitter", (&MuxConfig{Slots: 1, Lifetime: 1, LifetimeJitter: -1}).Validate(), "MuxConfig", "LifetimeJitter"},
		{"mux jitter without lifetime", (&MuxConfig{Slots: 1, LifetimeJitter: 1}).Validate(), "MuxConfig", "LifetimeJitter"},
		{"mux policy", (&MuxConfig{Slots: 1, Policy: bad}).Validate(), "MuxConfig", "Policy.MaxAttempts"},
		{"pool ok", (&PoolConfig{MinimumSize: 2, MaximumSize: 2, MaximumIdle: 4}).Validate(), "", ""},
		{"pool min unbounded", (&PoolConfig{MinimumSize: 9}).Validate(), "", ""},
		{"pool negative min", (&PoolConfig{MinimumSize: -1}).Validate(), "PoolConfig", "MinimumSize"},
		{"pool negative max", (&PoolConfig{MaximumSize: -1}).Validate(), "PoolConfig", "MaximumSize"},
		{"pool negative idle", (&PoolConfig{MaximumIdle: -1}).Validate(), "PoolConfig", "MaximumIdle"},
		{"pool negative idle timeout", (&PoolConfig{IdleTimeout: -1}).Validate(), "PoolConfig", "IdleTimeout"},
		{"pool negative waiters", (&PoolConfig{MaxWaiters: -1}).Validate(), "PoolConfig", "MaxWaiters"},
		{"pool id base", (&PoolConfig{IDBase: IDBase(MachinePool) + 1}).Validate(), "PoolConfig", "IDBase"},
		{"pool jitter without lifetime", (&PoolConfig{LifetimeJitter: 1}).Validate(), "PoolConfig", "LifetimeJitter"},
		{"pool policy", (&PoolConfig{Policy: bad}).Validate(), "PoolConfig", "Policy.MaxAttempts"},
		{"episode ok", (&EpisodeConfig{Machine: MachineShardedPubSub, IDBase: IDBase(MachineShardedPubSub)}).Validate(), "", ""},
		{"episode machine", (&EpisodeConfig{Machine: MachinePool}).Validate(), "EpisodeConfig", "Machine"},
		{"episode negative waiters", (&EpisodeConfig{Machine: MachinePubSub, MaxWaiters: -2}).Validate(), "EpisodeConfig", "MaxWaiters"},
		{"episode id base", (&EpisodeConfig{Machine: MachinePubSub, IDBase: 7}).Validate(), "EpisodeConfig", "IDBase"},
		{"episode policy", (&EpisodeConfig{Machine: MachinePubSub, Policy: &Policy{JitterRatio: 2}}).Validate(), "EpisodeConfig", "Policy.JitterRatio"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.field == "" {
				if c.err != nil {
					t.Fatalf("want valid, got %v", c.err)
				}
				return
			}
			var ce *ConfigError
			if !errors.As(c.err, &ce) || ce.Config != c.config || ce.Field != c.field {
				t.Fatalf("want a ConfigError on %s.%s, got %v", c.config, c.field, c.err)
			}
			if !strings.HasPrefix(c.err.Error(), "respire: invalid "+c.config+": "+c.field+" ") {
				t.Fatalf("message %q", c.err)
			}
			var pe *PolicyError
			if isPolicy := strings.HasPrefix(c.field, "Policy."); errors.As(c.err, &pe) != isPolicy ||
				(isPolicy && "Policy."+pe.Field != c.field) {
				t.Fatalf("policy error %v of %v", pe, c.err)
			}
		})
	}
}

// TestNewRefusesInvalidConfig: the constructors panic with Validate's error, before allocating
// anything (a huge slot count must not reach make).
func TestNewRefusesInvalidConfig(t *testing.T) {
	for name, build := range map[string]func(){
		"mux":     func() { NewMux(MuxConfig{Slots: 1 << 40}) },
		"pool":    func() { NewPool(PoolConfig{MaximumIdle: -1}) },
		"episode": func() { NewEpisode(EpisodeConfig{Machine: MachineMux}) },
	} {
		func() {
			defer func() {
				err, _ := recover().(error)
				var ce *ConfigError
				if !errors.As(err, &ce) {
					t.Errorf("%s: panicked with %v, want a *ConfigError", name, err)
				}
			}()
			build()
		}()
	}
}
