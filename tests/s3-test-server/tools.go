//go:build tools

// Package tools pins the S3-compatible server of the s3:// checkpoint tests, SeaweedFS's `weed`
// (Apache-2.0), so that go.mod and go.sum here are the whole pin; scripts/install-s3-server.sh
// builds it into a cache outside the repository.
package tools

import _ "github.com/seaweedfs/seaweedfs/weed"
