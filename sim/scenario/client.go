package scenario

import (
	"errors"
	"reflect"
	"strings"

	"github.com/respire-go/respire/engine"
	"github.com/respire-go/respire/engine/config"
)

// The client section of a scenario goes through the client's own resolver (engine/config):
// options turns it into the resolver's options, ClientConfig resolves them, and the resolver's
// errors come back naming the YAML field. The simulator keeps no defaults or bounds of its own
// for the options the client has.

// options returns the client section as the resolver's options: the same fields under the same
// names. A protocol word other than auto, resp2 and resp3 becomes an invalid protocol, which the
// resolver rejects with the client's reason.
func (c *Client) options() config.Options {
	o := config.Options{
		Connections:                 c.Connections,
		ConnectTimeout:              c.ConnectTimeout,
		CommandTimeout:              c.CommandTimeout,
		Username:                    c.Username,
		Password:                    c.Password,
		Database:                    c.Database,
		ClientName:                  c.ClientName,
		LibraryName:                 c.LibraryName,
		DisableLibraryInfo:          c.DisableLibraryInfo,
		EnableFences:                c.EnableFences,
		ReconnectPolicy:             c.ReconnectPolicy.Policy(),
		ConnectionIdleReadTimeout:   c.ConnectionIdleReadTimeout,
		GatheredWriteStallTimeout:   c.GatheredWriteStallTimeout,
		ConnectionMaxLifetime:       c.ConnectionMaxLifetime,
		ConnectionMaxLifetimeJitter: c.ConnectionMaxLifetimeJitter,
		MaxWaiters:                  c.MaxWaiters,

		UseCluster:                     c.UseCluster,
		ClusterTopologyRefreshInterval: c.ClusterTopologyRefreshInterval,
	}
	switch c.Protocol {
	case "", ProtocolAuto:
		o.Protocol = config.ProtocolAuto
	case ProtocolRESP2:
		o.Protocol = config.ProtocolRESP2
	case ProtocolRESP3:
		o.Protocol = config.ProtocolRESP3
	default:
		o.Protocol = -1
	}
	c.maintOptions(&o)
	if p := c.DedicatedPool; p != nil {
		o.DedicatedPool = config.DedicatedPool{MinimumSize: p.MinimumSize, MaximumSize: p.MaximumSize,
			MaximumIdle: p.MaximumIdle, IdleTimeout: p.IdleTimeout}
	}
	return o
}

// setOptions writes the resolver's options back into the client section (the inverse of options,
// for valid options): how the values in effect replace the zero values.
func (c *Client) setOptions(o *config.Options) {
	c.Connections, c.ConnectTimeout, c.CommandTimeout = o.Connections, o.ConnectTimeout, o.CommandTimeout
	c.Protocol = o.Protocol.String()
	c.Username, c.Password, c.Database, c.ClientName = o.Username, o.Password, o.Database, o.ClientName
	c.LibraryName, c.DisableLibraryInfo, c.EnableFences = o.LibraryName, o.DisableLibraryInfo, o.EnableFences
	c.ReconnectPolicy = policySpec(o.ReconnectPolicy)
	c.ConnectionIdleReadTimeout, c.GatheredWriteStallTimeout = o.ConnectionIdleReadTimeout, o.GatheredWriteStallTimeout
	c.ConnectionMaxLifetime, c.ConnectionMaxLifetimeJitter = o.ConnectionMaxLifetime, o.ConnectionMaxLifetimeJitter
	c.MaxWaiters = o.MaxWaiters
	c.UseCluster, c.ClusterTopologyRefreshInterval = o.UseCluster, o.ClusterTopologyRefreshInterval
	c.setMaintOptions(o)
	p := o.DedicatedPool
	c.DedicatedPool = &DedicatedPoolSpec{MinimumSize: p.MinimumSize, MaximumSize: p.MaximumSize,
		MaximumIdle: p.MaximumIdle, IdleTimeout: p.IdleTimeout}
}

// ClientConfig resolves the client section with the client's resolver (engine/config): the
// defaults, bounds, errors and derived configuration of client.Options for the same values. An
// error is a *Error naming the YAML field ("client.connection_max_lifetime") with the
// reason a *client.ConfigError gives for the Options field.
func (sc *Scenario) ClientConfig() (config.Resolved, error) {
	r, err := config.Resolve(sc.Client.options())
	if err != nil {
		var fe *config.FieldError
		if errors.As(err, &fe) {
			return r, fieldErr("client."+yamlPath(reflect.TypeOf(Client{}), fe.Field), fe.Reason)
		}
		return r, fieldErr("client", err.Error())
	}
	return r, nil
}

// EngineConfig returns the engine configuration a run of sc uses (sc must be valid: Parse
// and Resolve check it): the resolver's configuration for the client section, with the endpoint
// of the first node and no engine journal (JournalSize -1; the run records every step itself).
// engine.Replay over Result.Steps' events with it reproduces the recorded effects.
func (sc *Scenario) EngineConfig() engine.Config {
	r, err := sc.ClientConfig()
	if err != nil {
		panic("sim: EngineConfig of an invalid scenario: " + err.Error())
	}
	cfg := r.ClusterEngine(sc.clusterSeeds())
	cfg.Endpoint = engine.Endpoint{Host: sc.Topology.Nodes[0].ID, Port: NodePort}
	if s := sc.Topology.Sentinel; sc.IsSentinel() && s != nil {
		cfg = r.SentinelEngine(sc.SentinelEndpoints(), s.PrimaryName)
		cfg.Endpoint = engine.Endpoint{Host: s.Primary, Port: NodePort}
	}
	cfg.JournalSize = -1
	return cfg
}

// yamlPath maps a dotted Go field path under t ("ReconnectPolicy.JitterRatio") to its YAML path
// ("reconnect_policy.jitter_ratio") through the fields' yaml tags.
func yamlPath(t reflect.Type, goPath string) string {
	names := strings.Split(goPath, ".")
	for i, name := range names {
		for t != nil && t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t == nil || t.Kind() != reflect.Struct {
			names[i], t = snakeCase(name), nil
			continue
		}
		f, ok := t.FieldByName(name)
		if !ok {
			names[i], t = snakeCase(name), nil
			continue
		}
		names[i], _, _ = strings.Cut(f.Tag.Get("yaml"), ",")
		t = f.Type
	}
	return strings.Join(names, ".")
}

// snakeCase writes a Go field name in snake_case: ConnectionMaxLifetime becomes
// connection_max_lifetime, and an initialism stays one word (TLSServerName: tls_server_name).
func snakeCase(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		upper := c >= 'A' && c <= 'Z'
		if upper && i > 0 {
			prevLower := name[i-1] >= 'a' && name[i-1] <= 'z' || name[i-1] >= '0' && name[i-1] <= '9'
			nextLower := i+1 < len(name) && name[i+1] >= 'a' && name[i+1] <= 'z'
			prevUpper := name[i-1] >= 'A' && name[i-1] <= 'Z'
			if prevLower || (prevUpper && nextLower) {
				b.WriteByte('_')
			}
		}
		if upper {
			c += 'a' - 'A'
		}
		b.WriteByte(c)
	}
	return b.String()
}
