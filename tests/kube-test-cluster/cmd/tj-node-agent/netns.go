package main

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// --pod-network=netns: each pod gets its own network namespace, as a kubelet with a CNI plugin
// gives it, so that programs which bind 0.0.0.0:<port> (TensorFlow's gRPC server binds
// 0.0.0.0:2222 in every PS and worker) do not collide. The addresses stay in 127.0.0.0/8, as every
// network test of the project must:
//
//   - the pod's namespace has its own loopback (127.0.0.1/32 only, so the rest of 127/8 is
//     routable) and eth0, one end of a veth pair, holding the pod IP <base>n/32;
//   - the node's end of the pair (tjv<hex of the IP>) stays in the agent's namespace; a /32 route
//     to the pod IP over it in the LOCAL table wins over `local 127.0.0.0/8 dev lo` by longest
//     prefix, so only the pods' addresses leave lo;
//   - route_localnet=1 on both ends lets 127/8 packets cross a non-loopback link, and forwarding=1
//     on the node's ends routes pod to pod through the node (per device: ip_forward is untouched);
//   - the gateway <base>1 is an address of the node (all of 127/8 is): a pod reaches the node and
//     every other pod through it. The node reaches a pod from the gateway address (the route's
//     src), never from 127.0.0.1, which inside a pod is the pod itself;
//   - the API server listens on 127.0.0.1 only: the agent forwards <gateway>:<its port> to it and
//     pods name it kubernetes.default.svc (in their /etc/hosts, a name in the server's
//     certificate), so TLS verification holds.
//
// Commands are iproute2's `ip` and plain writes under /proc/sys; setns is golang.org/x/sys/unix's
// (already in go.sum through client-go).

const netnsDir = "/run/netns"

type podNetwork struct {
	base    string // <base>n are the pod IPs
	gateway string // <base>1, the node's address on the pods' links

	mu   sync.Mutex
	live map[string]bool // pod IP -> namespace set up
}

func newPodNetwork(base string, first int) (*podNetwork, error) {
	if base == "127.0.0." {
		return nil, fmt.Errorf("--pod-network=netns: --pod-cidr-base 127.0.0. would make the gateway 127.0.0.1, which is every pod's own localhost; use another base (e.g. 127.0.42.)")
	}
	if first < 2 {
		return nil, fmt.Errorf("--pod-network=netns: --pod-ip-first must be >= 2 (%s1 is the node's gateway address)", base)
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return nil, fmt.Errorf("--pod-network=netns needs iproute2's ip: %v", err)
	}
	return &podNetwork{base: base, gateway: base + "1", live: map[string]bool{}}, nil
}

// linkName is the node's end of the pod's veth pair and the name of its namespace: unique per pod
// IP (the first octet is always 127), at most 15 characters as Linux requires.
func linkName(ip string) string {
	v4 := net.ParseIP(ip).To4()
	if v4 == nil {
		return "tjv-invalid"
	}
	return fmt.Sprintf("tjv%02x%02x%02x", v4[1], v4[2], v4[3])
}

// nsPath is the namespace file a container's wrapper enters (setns).
func (n *podNetwork) nsPath(ip string) string { return filepath.Join(netnsDir, linkName(ip)) }

func runIP(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func writeSysctl(path string) error {
	if err := os.WriteFile(path, []byte("1"), 0o644); err != nil {
		return fmt.Errorf("sysctl %s=1: %v", path, err)
	}
	return nil
}

// setup makes the pod's namespace and link; an existing one of the same IP (an agent killed before
// it cleaned up) is removed first.
func (n *podNetwork) setup(ip string) (err error) {
	name := linkName(ip)
	n.remove(ip)
	defer func() {
		if err != nil {
			n.remove(ip)
		}
	}()
	if err := runIP("netns", "add", name); err != nil {
		return err
	}
	if err := runIP("link", "add", name, "type", "veth", "peer", "name", "eth0", "netns", name); err != nil {
		return err
	}
	for _, key := range []string{"route_localnet", "forwarding"} {
		if err := writeSysctl(filepath.Join("/proc/sys/net/ipv4/conf", name, key)); err != nil {
			return err
		}
	}
	if err := runIP("link", "set", name, "up"); err != nil {
		return err
	}
	if err := runIP("route", "add", ip+"/32", "dev", name, "src", n.gateway, "table", "local"); err != nil {
		return err
	}
	// Inside: the sysctls of the pod's namespace are written by a process in it.
	if err := runIP("netns", "exec", name, "sh", "-c",
		"echo 1 > /proc/sys/net/ipv4/conf/all/route_localnet && echo 1 > /proc/sys/net/ipv4/conf/eth0/route_localnet"); err != nil {
		return err
	}
	for _, args := range [][]string{
		{"link", "set", "lo", "up"},
		{"addr", "del", "127.0.0.1/8", "dev", "lo"},
		{"addr", "add", "127.0.0.1/32", "dev", "lo"},
		{"addr", "add", ip + "/32", "dev", "eth0"},
		{"link", "set", "eth0", "up"},
		{"route", "add", n.gateway + "/32", "dev", "eth0", "src", ip},
		{"route", "add", "127.0.0.0/8", "via", n.gateway, "dev", "eth0", "src", ip},
	} {
		if err := runIP(append([]string{"-n", name}, args...)...); err != nil {
			return err
		}
	}
	n.mu.Lock()
	n.live[ip] = true
	n.mu.Unlock()
	return nil
}

// remove deletes the pod's link (both ends) and namespace name; errors are logged (nothing to undo).
func (n *podNetwork) remove(ip string) {
	name := linkName(ip)
	if _, err := net.InterfaceByName(name); err == nil {
		if err := runIP("link", "del", name); err != nil {
			klog.Warningf("pod network %s: %v", ip, err)
		}
	}
	if _, err := os.Stat(filepath.Join(netnsDir, name)); err == nil {
		if err := runIP("netns", "del", name); err != nil {
			klog.Warningf("pod network %s: %v", ip, err)
		}
	}
	n.mu.Lock()
	delete(n.live, ip)
	n.mu.Unlock()
}

// removeAll: at agent shutdown, after the processes are gone.
func (n *podNetwork) removeAll() {
	n.mu.Lock()
	ips := make([]string, 0, len(n.live))
	for ip := range n.live {
		ips = append(ips, ip)
	}
	n.mu.Unlock()
	for _, ip := range ips {
		n.remove(ip)
	}
}

// apiServerName is how pods reach the API server: in the test control plane's certificate (up.sh).
const apiServerName = "kubernetes.default.svc"

// apiServerForPods starts the relay, maps the API server's names to the gateway in every pod's
// /etc/hosts, and returns the in-cluster variables naming it. The relay lives as long as the agent.
func (n *podNetwork) apiServerForPods(hosts *hostsFiles, apiURL string) ([]corev1.EnvVar, error) {
	u, err := url.Parse(apiURL)
	if err != nil || u.Port() == "" {
		return nil, fmt.Errorf("--pod-network=netns: API server URL %q: want https://host:port", apiURL)
	}
	if _, err := n.forwardAPIServer(u.Host); err != nil {
		return nil, err
	}
	hosts.header += n.gateway + " " + apiServerName + ".cluster.local " + apiServerName + " kubernetes.default kubernetes\n"
	return inClusterServiceEnv("https://" + net.JoinHostPort(apiServerName, u.Port()))
}

// forwardAPIServer listens on <gateway>:<port of apiHostPort> and relays every connection to the
// API server (TLS passes through untouched). Returns the listener (closed at shutdown).
func (n *podNetwork) forwardAPIServer(apiHostPort string) (net.Listener, error) {
	_, port, err := net.SplitHostPort(apiHostPort)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", net.JoinHostPort(n.gateway, port))
	if err != nil {
		return nil, fmt.Errorf("--pod-network=netns: API server relay on %s:%s: %v", n.gateway, port, err)
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go relay(c, apiHostPort)
		}
	}()
	return l, nil
}

func relay(c net.Conn, to string) {
	defer c.Close()
	up, err := net.Dial("tcp", to)
	if err != nil {
		klog.Warningf("API server relay: %v", err)
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	<-done
}

// enterNetNS is the wrapper's first step: the calling thread joins the pod's namespace, and the
// exec that follows on the same thread keeps it.
func enterNetNS(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("pod network namespace: %v", err)
	}
	defer f.Close()
	if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("setns %s: %v", path, err)
	}
	return nil
}
