package netio

import (
	"context"
	"strings"
	"time"
)

// CredentialError reports that TransportConfig.Credentials failed to supply credentials for a
// connection attempt. It is transient: a later attempt asks again. Its message is the provider's
// error, so a provider must not put secrets in its errors.
type CredentialError struct {
	// Err is the provider's error.
	Err error
}

// Error implements error.
func (e *CredentialError) Error() string {
	return "respire: credential provider failed: " + strings.TrimPrefix(e.Err.Error(), "respire: ")
}

// Unwrap returns the provider's error.
func (e *CredentialError) Unwrap() error { return e.Err }

// withCredentials returns the configuration of one attempt's handshake: t's own, or a copy with
// the credentials the provider supplies now, asked within the handshake budget.
func (t *Transport) withCredentials(ctx context.Context, budget time.Duration) (*TransportConfig, error) {
	if t.cfg.Credentials == nil {
		return &t.cfg, nil
	}
	if budget > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, budget)
		defer cancel()
	}
	username, password, err := t.cfg.Credentials(ctx)
	if err != nil {
		return nil, &CredentialError{Err: err}
	}
	cfg := t.cfg
	cfg.Handshake.Username, cfg.Handshake.Password = username, password
	return &cfg, nil
}
