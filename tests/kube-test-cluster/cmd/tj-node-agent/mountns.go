package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
)

// Each container run gets its own mount namespace when the machine allows it (CAP_SYS_ADMIN: root,
// or root under gVisor). The agent starts itself again as a small wrapper (argv[1] ==
// mountExecArg) in a new mount namespace (exec.Cmd's Unshareflags, which also makes "/" private so
// nothing leaks back to the host); the wrapper bind-mounts the pod's volumes at their container
// paths and the agent's hosts file over /etc/hosts, then execs the container's command. The process
// keeps its pid and process group, so signals and exit codes are unaffected.

const mountExecArg = "__tj-node-agent-mount-exec"

// bindMount is one bind mount made inside the container's mount namespace.
type bindMount struct {
	Source   string `json:"source"` // host path
	Target   string `json:"target"` // path the container sees
	ReadOnly bool   `json:"readOnly,omitempty"`
}

type mountExecSpec struct {
	Binds []bindMount `json:"binds"`
	Exe   string      `json:"exe"`
	Argv  []string    `json:"argv"`
	Dir   string      `json:"dir,omitempty"` // working directory, entered after the mounts (it may be one)
	// Root, when set, is the image's root file system (--image-store): the binds' targets, Exe and
	// Dir are inside it, the host's /proc, /dev and /sys are bound into it, and the process
	// chroots there and runs as UID:GID.
	Root string `json:"root,omitempty"`
	UID  int    `json:"uid,omitempty"`
	GID  int    `json:"gid,omitempty"`
	// Groups are the process's supplementary groups (the pod's fsGroup and supplementalGroups).
	Groups []int `json:"groups,omitempty"`
	// NetNS, when set, is the pod's network namespace (--pod-network=netns), entered first.
	NetNS string `json:"netns,omitempty"`
}

// rootBinds puts the binds under root and adds what a container runtime provides: /proc, /dev and
// /sys of the host (the pod shares the node's PID and network namespaces here) and its resolv.conf.
func rootBinds(root string, binds []bindMount) []bindMount {
	out := []bindMount{
		{Source: "/proc", Target: "/proc"}, {Source: "/dev", Target: "/dev"}, {Source: "/sys", Target: "/sys", ReadOnly: true},
		{Source: "/etc/resolv.conf", Target: "/etc/resolv.conf", ReadOnly: true},
	}
	out = append(out, binds...)
	for i := range out {
		out[i].Target = inRoot(root, out[i].Target)
	}
	return out
}

// wrapForMountNamespace returns the executable and argv that run spec through the wrapper.
func wrapForMountNamespace(self string, spec mountExecSpec) (string, []string, error) {
	data, err := json.Marshal(spec)
	if err != nil {
		return "", nil, err
	}
	return self, []string{"tj-node-agent", mountExecArg, string(data)}, nil
}

// sortBinds orders parents before children ("/a" before "/a/b"), so nested mounts stack correctly.
func sortBinds(binds []bindMount) {
	sort.SliceStable(binds, func(i, j int) bool {
		return strings.Count(filepath.Clean(binds[i].Target), "/") < strings.Count(filepath.Clean(binds[j].Target), "/")
	})
}

// ensureMountPoint creates the target as a directory or an empty file, like the source. The mount
// namespace shares the host's file system, so a missing mount point is created on the host (as a
// container runtime creates it in the image's root file system); it stays after the container.
func ensureMountPoint(source, target string) error {
	st, err := os.Stat(source)
	if err != nil {
		return err
	}
	if st.IsDir() {
		return os.MkdirAll(target, 0o755)
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	if _, err := os.Stat(target); err == nil {
		return nil
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

func applyBinds(binds []bindMount) error {
	for _, b := range binds {
		if err := ensureMountPoint(b.Source, b.Target); err != nil {
			return fmt.Errorf("mount point %s: %v", b.Target, err)
		}
		if err := syscall.Mount(b.Source, b.Target, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
			return fmt.Errorf("bind mount %s at %s: %v", b.Source, b.Target, err)
		}
		if b.ReadOnly {
			flags := uintptr(syscall.MS_BIND | syscall.MS_REMOUNT | syscall.MS_RDONLY)
			if err := syscall.Mount("", b.Target, "", flags, ""); err != nil {
				return fmt.Errorf("read-only remount of %s: %v", b.Target, err)
			}
		}
	}
	return nil
}

// mountExecMain is the wrapper: bind mounts, then exec. Errors go to the container's log and end the
// run with exit code 128 (what the agent reports for a container that could not start).
func mountExecMain(arg string) {
	fail := func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "tj-node-agent: container start failed: "+format+"\n", a...)
		os.Exit(128)
	}
	var spec mountExecSpec
	if err := json.Unmarshal([]byte(arg), &spec); err != nil {
		fail("bad wrapper argument: %v", err)
	}
	if spec.NetNS != "" {
		// setns changes the calling thread only; the exec below runs on this same thread.
		runtime.LockOSThread()
		if err := enterNetNS(spec.NetNS); err != nil {
			fail("%v", err)
		}
	}
	binds := spec.Binds
	if spec.Root != "" {
		binds = rootBinds(spec.Root, binds)
	}
	if err := applyBinds(binds); err != nil {
		fail("%v", err)
	}
	if spec.Root != "" {
		if err := syscall.Chroot(spec.Root); err != nil {
			fail("chroot %s: %v", spec.Root, err)
		}
		if err := os.Chdir("/"); err != nil {
			fail("chdir / in the image: %v", err)
		}
		// The working directory is made as root (a kubelet's runtime does the same), then the
		// process drops to the image's (or the pod's) user.
		if spec.Dir != "" {
			if err := os.MkdirAll(spec.Dir, 0o755); err != nil {
				fail("workingDir %s: %v", spec.Dir, err)
			}
		}
		if err := syscall.Setgroups(append([]int{}, spec.Groups...)); err != nil {
			fail("setgroups: %v", err)
		}
		if err := syscall.Setgid(spec.GID); err != nil {
			fail("setgid %d: %v", spec.GID, err)
		}
		if err := syscall.Setuid(spec.UID); err != nil {
			fail("setuid %d: %v", spec.UID, err)
		}
	}
	if spec.Dir != "" {
		if err := os.MkdirAll(spec.Dir, 0o755); err != nil {
			fail("workingDir %s: %v", spec.Dir, err)
		}
		if err := os.Chdir(spec.Dir); err != nil {
			fail("workingDir %s: %v", spec.Dir, err)
		}
	}
	if err := syscall.Exec(spec.Exe, spec.Argv, os.Environ()); err != nil {
		fail("exec %s: %v", spec.Exe, err)
	}
}

// probeMountNamespaces checks that a child can get its own mount namespace and bind-mount a file
// over /etc/hosts without the host seeing it.
func probeMountNamespaces(self, scratchDir string) error {
	if err := os.MkdirAll(scratchDir, 0o755); err != nil {
		return err
	}
	probe := filepath.Join(scratchDir, "mountns-probe-hosts")
	const marker = "127.0.0.9 tj-node-agent-mountns-probe\n"
	if err := os.WriteFile(probe, []byte(marker), 0o644); err != nil {
		return err
	}
	defer os.Remove(probe)
	cat, err := exec.LookPath("cat")
	if err != nil {
		return fmt.Errorf("probe needs cat: %v", err)
	}
	_, argv, err := wrapForMountNamespace(self, mountExecSpec{
		Binds: []bindMount{{Source: probe, Target: "/etc/hosts", ReadOnly: true}}, Exe: cat, Argv: []string{"cat", "/etc/hosts"}})
	if err != nil {
		return err
	}
	cmd := &exec.Cmd{Path: self, Args: argv, SysProcAttr: &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
	}
	if string(out) != marker {
		return fmt.Errorf("/etc/hosts inside the namespace reads %q, want the probe file", out)
	}
	if host, _ := os.ReadFile("/etc/hosts"); strings.Contains(string(host), "tj-node-agent-mountns-probe") {
		return fmt.Errorf("the bind mount leaked to the host's /etc/hosts")
	}
	return nil
}
