// Command etcd is the upstream go.etcd.io/etcd/server/v3 main. `go install`
// of the etcd server module does not work (its go.mod has replace
// directives), so it is rebuilt from this wrapper module.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
