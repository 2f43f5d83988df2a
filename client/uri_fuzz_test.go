package client

import (
	"errors"
	"strings"
	"testing"
)

// fuzzSecret is a password planted by the fuzz targets; no error message may contain it.
const fuzzSecret = "Qv7SECRETpw3"

// checkParse asserts the properties every parse result must have: any error is a
// *ConfigError; a success has valid endpoints and either validates or fails Validate with a
// *ConfigError.
func checkParse(t *testing.T, in string, o Options, err error) {
	t.Helper()
	if err != nil {
		var ce *ConfigError
		if !errors.As(err, &ce) {
			t.Fatalf("parsing %q: error %T is not a *ConfigError: %v", in, err, err)
		}
		if ce.Option == "" || ce.Reason == "" {
			t.Fatalf("parsing %q: incomplete *ConfigError %#v", in, ce)
		}
		return
	}
	if len(o.Endpoints) == 0 {
		t.Fatalf("parsing %q: success without an endpoint", in)
	}
	for _, e := range o.Endpoints {
		if e.Host == "" || e.Port < 0 || e.Port > 65535 {
			t.Fatalf("parsing %q: invalid endpoint %+v", in, e)
		}
	}
	if verr := o.Validate(); verr != nil {
		var ce *ConfigError
		if !errors.As(verr, &ce) {
			t.Fatalf("validating %q: error %T is not a *ConfigError: %v", in, verr, verr)
		}
		if strings.Contains(verr.Error(), fuzzSecret) {
			t.Fatalf("validating %q: the secret leaked: %v", in, verr)
		}
	}
}

// checkNoSecret fails when an error message contains the planted secret.
func checkNoSecret(t *testing.T, in string, err error) {
	t.Helper()
	if err != nil && strings.Contains(err.Error(), fuzzSecret) {
		t.Fatalf("parsing %q: the password leaked into the error: %v", in, err)
	}
}

func FuzzParseURI(f *testing.F) {
	f.Add("redis://localhost:6379/0?clientName=checkout-api&connections=4&allowAdmin=false")
	f.Fuzz(func(t *testing.T, s string) {
		o, err := ParseURI(s)
		checkParse(t, s, o, err)
		if strings.Contains(s, fuzzSecret) {
			return // the input itself names the secret somewhere else
		}
		// The secret as the password of every credential position, followed by the input.
		for _, in := range []string{
			"redis://user:" + fuzzSecret + "@" + s,
			"rediss://:" + fuzzSecret + "@" + s,
			"redis://" + fuzzSecret + "@" + s,
			"unix://:" + fuzzSecret + "@" + s,
			"redis://h?sentinelPassword=" + fuzzSecret + "&" + s,
			"redis://" + s + "&sentinelPassword=" + fuzzSecret,
		} {
			o, err := ParseURI(in)
			checkParse(t, in, o, err)
			checkNoSecret(t, in, err)
		}
	})
}
