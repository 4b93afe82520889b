// The S3-compatible server of the s3:// checkpoint tests (tools.go): this file and go.sum are its
// pin; scripts/install-s3-server.sh builds it into a cache outside the repository.
module github.com/trainingjob-operator/tests/s3-test-server

go 1.26.6

require github.com/seaweedfs/seaweedfs v0.0.0-20261109003541-7506e5f91cd6

// SeaweedFS's own go.mod replaces this module; a replace in a dependency is not applied to the
// module that requires it, so it is repeated here.
replace github.com/tyler-smith/go-bip39 => github.com/cosmos/go-bip39 v1.0.0
