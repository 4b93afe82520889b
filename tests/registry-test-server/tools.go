//go:build tools

// Package tools pins the OCI registry of the cluster doc test, the CNCF distribution registry
// (`registry`, Apache-2.0), so that go.mod and go.sum here are the whole pin;
// scripts/install-registry.sh builds it into a cache outside the repository.
package tools

import _ "github.com/distribution/distribution/v3/cmd/registry"
