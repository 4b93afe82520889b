package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// With --image-store=buildah the agent runs each container inside the root file system of the
// image its pod names, as a kubelet with a container runtime would: the image is looked up in
// buildah's storage (scripts/build-images.sh puts the project's images there; nothing is pulled),
// each container run gets its own copy-on-write working container (`buildah from` + `buildah
// mount`), and the mount namespace wrapper (mountns.go) chroots into it. The image's entrypoint,
// cmd, user, environment and working directory apply by the kubelet's rules (containerCommand,
// containerUser). A missing image is ErrImagePull, then ImagePullBackOff; a command the image
// does not have is CreateContainerError.

// imageConfig is what a container runtime takes from an image's OCI config.
type imageConfig struct {
	Entrypoint []string `json:"Entrypoint"`
	Cmd        []string `json:"Cmd"`
	User       string   `json:"User"`
	Env        []string `json:"Env"`
	WorkingDir string   `json:"WorkingDir"`
}

// imagePullError is an image that is not in the store: the kubelet's ErrImagePull.
type imagePullError struct{ msg string }

func (e *imagePullError) Error() string { return e.msg }

// createContainerError is a container the runtime could not create from its image (e.g. its
// command is not in the image): the kubelet's CreateContainerError.
type createContainerError struct{ msg string }

func (e *createContainerError) Error() string { return e.msg }

// normalizeImage spells a pod's image the way the kubelet's runtime resolves it: an unqualified
// name is on docker.io (library/ for a single component), and no tag means :latest.
func normalizeImage(ref string) string {
	name, digest, hasDigest := strings.Cut(ref, "@")
	first, _, hasSlash := strings.Cut(name, "/")
	if !hasSlash {
		name = "docker.io/library/" + name
	} else if !strings.ContainsAny(first, ".:") && first != "localhost" {
		name = "docker.io/" + name
	}
	if hasDigest {
		return name + "@" + digest
	}
	if !strings.Contains(path.Base(name), ":") {
		name += ":latest"
	}
	return name
}

// containerCommand applies the kubelet's rules: command replaces the image's entrypoint (and its
// cmd); args replace the image's cmd.
func containerCommand(c *corev1.Container, img imageConfig) []string {
	if len(c.Command) > 0 {
		return append(append([]string{}, c.Command...), c.Args...)
	}
	args := img.Cmd
	if len(c.Args) > 0 {
		args = c.Args
	}
	return append(append([]string{}, img.Entrypoint...), args...)
}

// envPATH is the PATH a container sees: its own env's, else the image's, else the runtime default.
func envPATH(env []string) string {
	p := "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "PATH="); ok {
			p = v
		}
	}
	return p
}

// findInRoot resolves argv0 inside the root file system as execve in the container would: a name
// with a slash as is, a bare name on PATH. It returns the path inside the container.
func findInRoot(root, argv0, pathEnv string) (string, error) {
	var cands []string
	if strings.Contains(argv0, "/") {
		cands = []string{argv0}
	} else {
		for _, dir := range filepath.SplitList(pathEnv) {
			if dir != "" {
				cands = append(cands, path.Join(dir, argv0))
			}
		}
	}
	for _, c := range cands {
		if st, err := os.Stat(inRoot(root, c)); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return c, nil
		}
	}
	if strings.Contains(argv0, "/") {
		return "", &createContainerError{fmt.Sprintf("exec: %q: stat %s: no such file or directory", argv0, argv0)}
	}
	return "", &createContainerError{fmt.Sprintf("exec: %q: executable file not found in $PATH", argv0)}
}

// inRoot is a container path on the host: symbolic links in the image are followed inside root
// (Debian's /var/run -> /run is absolute; followed by the host it would be the host's /run), and
// ".." stops at root. A part that does not exist yet is kept as written (a mount point to create).
func inRoot(root, p string) string {
	cur := "/"
	queue := strings.Split(p, "/")
	for hops := 0; len(queue) > 0; {
		name := queue[0]
		queue = queue[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			cur = path.Dir(cur)
			continue
		}
		next := path.Join(cur, name)
		link, err := os.Readlink(filepath.Join(root, next))
		if err != nil || hops >= 40 { // not a symbolic link (or a loop: left to fail where it is used)
			cur = next
			continue
		}
		hops++
		if path.IsAbs(link) {
			cur = "/"
		}
		queue = append(strings.Split(link, "/"), queue...)
	}
	return filepath.Join(root, cur)
}

// containerUser: the pod's runAsUser/runAsGroup (container over pod) win over the image's USER,
// which may name a user of the image's /etc/passwd. runAsNonRoot refuses uid 0 as the kubelet
// does (CreateContainerConfigError).
func containerUser(pod *corev1.Pod, c *corev1.Container, img imageConfig, root string) (uid, gid int, home string, err error) {
	user, group, _ := strings.Cut(img.User, ":")
	uid, gid, home = 0, 0, "/"
	if user != "" {
		if uid, gid, home, err = lookupPasswd(root, user); err != nil {
			return 0, 0, "", configErrorf("%v", err)
		}
	}
	if group != "" {
		if gid, err = strconv.Atoi(group); err != nil {
			return 0, 0, "", configErrorf("image user %q: group must be numeric", img.User)
		}
	}
	var runAsUser, runAsGroup *int64
	var nonRoot *bool
	if sc := pod.Spec.SecurityContext; sc != nil {
		runAsUser, runAsGroup, nonRoot = sc.RunAsUser, sc.RunAsGroup, sc.RunAsNonRoot
	}
	if sc := c.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			runAsUser = sc.RunAsUser
		}
		if sc.RunAsGroup != nil {
			runAsGroup = sc.RunAsGroup
		}
		if sc.RunAsNonRoot != nil {
			nonRoot = sc.RunAsNonRoot
		}
	}
	if runAsUser != nil {
		uid = int(*runAsUser)
	}
	if runAsGroup != nil {
		gid = int(*runAsGroup)
	}
	if nonRoot != nil && *nonRoot && uid == 0 {
		return 0, 0, "", configErrorf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", pod.Name, c.Name)
	}
	return uid, gid, home, nil
}

// lookupPasswd: a numeric user, or a name in the image's /etc/passwd.
func lookupPasswd(root, user string) (uid, gid int, home string, err error) {
	numeric, numErr := strconv.Atoi(user)
	f, ferr := os.Open(inRoot(root, "/etc/passwd"))
	if ferr == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Split(sc.Text(), ":")
			if len(fields) < 6 {
				continue
			}
			u, _ := strconv.Atoi(fields[2])
			if fields[0] == user || (numErr == nil && u == numeric) {
				g, _ := strconv.Atoi(fields[3])
				return u, g, fields[5], nil
			}
		}
	}
	if numErr == nil {
		return numeric, 0, "/", nil
	}
	return 0, 0, "", fmt.Errorf("image user %q is not in the image's /etc/passwd", user)
}

// imageStore is where images come from.
type imageStore interface {
	// config of an image, or an *imagePullError when the store does not have it.
	config(image string) (imageConfig, error)
	// rootfs makes a fresh copy-on-write root file system of image for one container run, named
	// name; release removes it.
	rootfs(image, name string) (dir string, release func(), err error)
}

// buildahStore reads buildah's local storage (root: /var/lib/containers). It never pulls.
type buildahStore struct{ buildah string }

func newBuildahStore() (*buildahStore, error) {
	b, err := exec.LookPath("buildah")
	if err != nil {
		return nil, fmt.Errorf("--image-store=buildah: %v", err)
	}
	return &buildahStore{buildah: b}, nil
}

func (s *buildahStore) run(args ...string) (string, error) {
	out, err := exec.Command(s.buildah, args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("buildah %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return strings.TrimSpace(string(out)), nil
}

func (s *buildahStore) config(image string) (imageConfig, error) {
	ref := normalizeImage(image)
	if _, err := exec.Command(s.buildah, "inspect", "--type", "image", "--format", "{{.FromImageID}}", ref).Output(); err != nil {
		return imageConfig{}, &imagePullError{fmt.Sprintf("failed to pull and unpack image %q: %s not found in the node's image store "+
			"(tj-node-agent pulls only from its --pull-registry hosts: build it with scripts/build-images.sh)", image, ref)}
	}
	out, err := s.run("inspect", "--type", "image", ref) // buildah 1.28's --format has no json function
	if err != nil {
		return imageConfig{}, err
	}
	var inspected struct {
		OCIv1 struct {
			Config imageConfig `json:"config"`
		} `json:"OCIv1"`
	}
	if err := json.Unmarshal([]byte(out), &inspected); err != nil {
		return imageConfig{}, fmt.Errorf("image %s: config: %v", ref, err)
	}
	return inspected.OCIv1.Config, nil
}

func (s *buildahStore) rootfs(image, name string) (string, func(), error) {
	_, _ = s.run("rm", name) // left by an agent that was killed
	if _, err := s.run("from", "--pull-never", "--name", name, normalizeImage(image)); err != nil {
		return "", nil, err
	}
	release := func() { _, _ = s.run("rm", name) }
	dir, err := s.run("mount", name)
	if err != nil {
		release()
		return "", nil, err
	}
	return dir, release, nil
}
