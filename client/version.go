package client

import "github.com/respire-go/respire/engine/config"

// Version is respire's version, in semantic-versioning form. Every connection sends it with
// CLIENT SETINFO LIB-VER (unless Options.DisableLibraryInfo), so that CLIENT LIST shows which
// respire a service runs.
//
// A version ending in "-dev" is a build between releases: its changes are listed under
// "Unreleased" in CHANGELOG.md and will be released as the version before the suffix. A
// version without the suffix is a release, the newest one CHANGELOG.md lists.
const Version = config.Version
