// tj-node-agent is a TEST-ONLY stand-in for the kubelet (never shipped). This machine has no container
// runtime, so the agent registers a Node, keeps its Lease and Ready condition, and runs the
// containers of the pods bound to it as local processes, each pod on its own 127.0.0.x address.
// See docs/e2e.md for what a pod sees and what is not supported.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
)

// stringList is a repeatable flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

type config struct {
	kubeconfig      string
	nodeName        string
	podIPBase       string
	podIPFirst      int
	podIPLast       int
	rootDir         string
	imageMapFile    string
	imageMaps       stringList
	capacity        string
	heartbeat       time.Duration
	leaveRunning    bool
	backoffInitial  time.Duration
	backoffMax      time.Duration
	shutdownGrace   time.Duration
	rewriteMounts   bool
	tokenExpiration time.Duration
	mountNamespaces string     // auto, true, false
	sharedDirs      stringList // containerPath=hostDir, bind-mounted in every container
	imageStore      string     // "" (host binaries, --image-map) or buildah
	pullRegistries  stringList // host[:port] whose images are pulled with the pods' pull secrets (pull.go)
	pullCertDir     string     // CA certificates (*.crt) those registries' TLS is verified with
	podNetwork      string     // host (the node's namespace) or netns (one per pod, netns.go)
}

func parseFlags(args []string) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("tj-node-agent", flag.ContinueOnError)
	fs.StringVar(&c.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the agent's identity (default $KUBECONFIG)")
	fs.StringVar(&c.nodeName, "node-name", "", "name of the Node to register (required)")
	fs.StringVar(&c.podIPBase, "pod-cidr-base", "127.0.0.", "pods get <base><n> as their IP; every 127.x.y.z is on the loopback interface")
	fs.IntVar(&c.podIPFirst, "pod-ip-first", 2, "first n handed out")
	fs.IntVar(&c.podIPLast, "pod-ip-last", 254, "last n handed out")
	fs.StringVar(&c.rootDir, "root-dir", "", "directory for pod directories (volumes, logs, tokens) (required)")
	fs.StringVar(&c.imageMapFile, "image-map-file", "", "file of 'image-pattern=path' lines (# comments); see --image-map")
	fs.Var(&c.imageMaps, "image-map", "image-pattern=path (repeatable): path.Match pattern on the image name; a directory is searched for the "+
		"container's command, a file is the entrypoint used when the container has no command")
	fs.StringVar(&c.capacity, "capacity", "cpu=8,memory=16Gi,pods=110", "node capacity = allocatable, name=quantity list")
	fs.DurationVar(&c.heartbeat, "heartbeat", 10*time.Second, "Lease renewal and Ready heartbeat period")
	fs.BoolVar(&c.leaveRunning, "leave-running", false, "on SIGTERM/SIGINT exit without killing the pods' processes (debugging only: a restarted agent cannot adopt them)")
	fs.DurationVar(&c.backoffInitial, "restart-backoff", time.Second, "first container restart delay (doubles per restart; the kubelet uses 10s)")
	fs.DurationVar(&c.backoffMax, "restart-backoff-max", 30*time.Second, "maximum container restart delay (the kubelet uses 5m)")
	fs.DurationVar(&c.shutdownGrace, "shutdown-grace", 5*time.Second, "on agent shutdown: SIGTERM to SIGKILL delay for the pods' processes")
	fs.BoolVar(&c.rewriteMounts, "rewrite-mount-paths", true, "replace volumeMount paths in command, args, env values and workingDir by the host directories")
	fs.StringVar(&c.mountNamespaces, "mount-namespaces", "auto", "run each container in its own mount namespace with its volumes at their "+
		"container paths and the agent's hosts file (Service names) over /etc/hosts: true, false, or auto (on when a probe succeeds)")
	fs.Var(&c.sharedDirs, "shared-dir", "containerPath=hostDir (repeatable): bind-mounted into every container (needs mount namespaces); "+
		"a stand-in for a ReadWriteMany volume every pod of the node mounts")
	fs.StringVar(&c.imageStore, "image-store", "", "buildah: run each container chrooted in the root file system of its image from buildah's "+
		"local storage (entrypoint, cmd, user, env, workingDir applied; a missing image is ErrImagePull); empty: host binaries by --image-map")
	fs.Var(&c.pullRegistries, "pull-registry", "host[:port] (repeatable): images on this registry are pulled from it over TLS with "+
		"the pod's imagePullSecrets, as a kubelet's runtime pulls, before they run (needs --image-store=buildah); others are "+
		"read from buildah's local storage")
	fs.StringVar(&c.pullCertDir, "pull-cert-dir", "", "directory of CA certificates (*.crt) the --pull-registry servers' "+
		"certificates are verified with, besides the system's (buildah's --cert-dir)")
	fs.StringVar(&c.podNetwork, "pod-network", "host", "host: pods share the node's network namespace and must bind their pod IP; "+
		"netns: each pod gets its own network namespace with its 127.x.y.z address on a veth pair (needs root, iproute2 and mount namespaces)")
	fs.DurationVar(&c.tokenExpiration, "token-expiration", time.Hour, "expiration asked for service-account tokens without one in the pod spec (renewed at 80%)")
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	fs.Var(klogFlagValue{klogFlags, "v"}, "v", "log verbosity")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if c.nodeName == "" {
		return nil, fmt.Errorf("--node-name is required")
	}
	if c.rootDir == "" {
		return nil, fmt.Errorf("--root-dir is required")
	}
	if c.kubeconfig == "" {
		return nil, fmt.Errorf("--kubeconfig is required (or set KUBECONFIG)")
	}
	if c.heartbeat <= 0 {
		return nil, fmt.Errorf("--heartbeat must be positive, got %v", c.heartbeat)
	}
	switch c.imageStore {
	case "", "buildah":
	default:
		return nil, fmt.Errorf("--image-store must be buildah or empty, got %q", c.imageStore)
	}
	if len(c.pullRegistries) > 0 && c.imageStore != "buildah" {
		return nil, fmt.Errorf("--pull-registry needs --image-store=buildah")
	}
	for _, r := range c.pullRegistries {
		if r == "" || strings.ContainsAny(r, "/@") {
			return nil, fmt.Errorf("--pull-registry %q: want a registry host[:port], no path", r)
		}
	}
	switch c.podNetwork {
	case "host", "netns":
	default:
		return nil, fmt.Errorf("--pod-network must be host or netns, got %q", c.podNetwork)
	}
	switch c.mountNamespaces {
	case "auto", "true", "false":
	default:
		return nil, fmt.Errorf("--mount-namespaces must be auto, true or false, got %q", c.mountNamespaces)
	}
	for _, sd := range c.sharedDirs {
		cp, hp, ok := strings.Cut(sd, "=")
		if !ok || !filepath.IsAbs(cp) || !filepath.IsAbs(hp) {
			return nil, fmt.Errorf("--shared-dir %q: want /container/path=/host/dir (both absolute)", sd)
		}
	}
	abs, err := filepath.Abs(c.rootDir)
	if err != nil {
		return nil, fmt.Errorf("--root-dir %q: %v", c.rootDir, err)
	}
	c.rootDir = abs
	return c, nil
}

// decideMountNamespaces applies --mount-namespaces: auto turns them on when the probe succeeds.
func decideMountNamespaces(cfg *config) (bool, error) {
	if cfg.mountNamespaces == "false" {
		klog.Infof("mount namespaces off: volumes by path rewriting, no Service names")
		return false, nil
	}
	self, err := os.Executable()
	if err == nil {
		err = probeMountNamespaces(self, filepath.Join(cfg.rootDir, "tmp"))
	}
	if err != nil {
		if cfg.mountNamespaces == "true" {
			return false, fmt.Errorf("--mount-namespaces=true: %v", err)
		}
		klog.Warningf("mount namespaces unavailable (%v): volumes by path rewriting, no Service names", err)
		return false, nil
	}
	klog.Infof("mount namespaces on: volumes at their container paths, Service names in /etc/hosts")
	return true, nil
}

type klogFlagValue struct {
	fs   *flag.FlagSet
	name string
}

func (k klogFlagValue) String() string {
	if k.fs == nil {
		return ""
	}
	return k.fs.Lookup(k.name).Value.String()
}
func (k klogFlagValue) Set(v string) error { return k.fs.Set(k.name, v) }

func parseCapacity(s string) (map[string]resource.Quantity, error) {
	out := map[string]resource.Quantity{}
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		name, val, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("--capacity: %q is not name=quantity", kv)
		}
		q, err := resource.ParseQuantity(val)
		if err != nil {
			return nil, fmt.Errorf("--capacity: %s=%q: %v", name, val, err)
		}
		out[name] = q
	}
	for _, need := range []string{"cpu", "memory", "pods"} {
		if _, ok := out[need]; !ok {
			return nil, fmt.Errorf("--capacity: %q missing (need cpu, memory and pods)", need)
		}
	}
	return out, nil
}

func main() {
	if len(os.Args) == 3 && os.Args[1] == mountExecArg {
		mountExecMain(os.Args[2]) // the per-container wrapper (mountns.go); does not return
	}
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "tj-node-agent: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	cfg, err := parseFlags(args)
	if err != nil {
		return err
	}
	capacity, err := parseCapacity(cfg.capacity)
	if err != nil {
		return err
	}
	images, err := loadImageMap(cfg.imageMapFile, cfg.imageMaps)
	if err != nil {
		return err
	}
	ips, err := newIPAllocator(cfg.podIPBase, cfg.podIPFirst, cfg.podIPLast)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.rootDir, 0o755); err != nil {
		return fmt.Errorf("--root-dir: %v", err)
	}
	restCfg, err := clientcmd.BuildConfigFromFlags("", cfg.kubeconfig)
	if err != nil {
		return fmt.Errorf("--kubeconfig %s: %v", cfg.kubeconfig, err)
	}
	restCfg.UserAgent = "tj-node-agent/" + cfg.nodeName
	restCfg.QPS, restCfg.Burst = 50, 100
	cs, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return fmt.Errorf("client for %s: %v", restCfg.Host, err)
	}
	var podNet *podNetwork
	if cfg.podNetwork == "netns" {
		if podNet, err = newPodNetwork(cfg.podIPBase, cfg.podIPFirst); err != nil {
			return err
		}
	}
	apiEnv, err := inClusterServiceEnv(restCfg.Host)
	if err != nil {
		return err
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)

	node := &nodeHeartbeat{cs: cs, name: cfg.nodeName, capacity: capacity, period: cfg.heartbeat}
	if err := node.register(ctx); err != nil {
		return err
	}
	klog.Infof("node %s registered (api %s, pods in %s, IPs %s%d-%d)", cfg.nodeName, restCfg.Host, cfg.rootDir,
		cfg.podIPBase, cfg.podIPFirst, cfg.podIPLast)
	go node.loop(ctx)

	mountNS, err := decideMountNamespaces(cfg)
	if err != nil {
		return err
	}
	if len(cfg.sharedDirs) > 0 && !mountNS {
		return fmt.Errorf("--shared-dir needs mount namespaces, which are off (--mount-namespaces=%s)", cfg.mountNamespaces)
	}
	for _, sd := range cfg.sharedDirs {
		_, hp, _ := strings.Cut(sd, "=")
		if err := os.MkdirAll(hp, 0o755); err != nil {
			return fmt.Errorf("--shared-dir %s: %v", sd, err)
		}
	}
	var hosts *hostsFiles
	if podNet != nil && !mountNS {
		return fmt.Errorf("--pod-network=netns needs mount namespaces, which are off (--mount-namespaces=%s)", cfg.mountNamespaces)
	}
	if mountNS {
		if hosts, err = newHostsFiles(cfg.rootDir); err != nil {
			return err
		}
		if podNet != nil {
			if apiEnv, err = podNet.apiServerForPods(hosts, restCfg.Host); err != nil {
				return err
			}
		}
		if err := hosts.start(ctx, cs); err != nil {
			return err
		}
	}
	mgr := newPodManager(cfg, cs, images, ips, apiEnv)
	mgr.hosts = hosts
	mgr.net = podNet
	if cfg.imageStore == "buildah" {
		if !mountNS {
			return fmt.Errorf("--image-store=buildah needs mount namespaces, which are off (--mount-namespaces=%s)", cfg.mountNamespaces)
		}
		if mgr.store, err = newBuildahStore(); err != nil {
			return err
		}
		klog.Infof("images from buildah's storage: containers run chrooted in their image")
		if len(cfg.pullRegistries) > 0 {
			if mgr.puller, err = newImagePuller(cfg, cs); err != nil {
				return err
			}
			klog.Infof("images of %s pulled with the pods' pull secrets", cfg.pullRegistries.String())
		}
	}
	if err := mgr.start(ctx); err != nil {
		return err
	}
	sig := <-sigs
	klog.Infof("received %v: stopping", sig)
	cancel()
	if cfg.leaveRunning {
		klog.Infof("--leave-running: the pods' processes stay")
		return nil
	}
	mgr.killAll(cfg.shutdownGrace)
	if podNet != nil {
		podNet.removeAll()
	}
	klog.Infof("all pod processes stopped")
	klog.Flush()
	return nil
}
