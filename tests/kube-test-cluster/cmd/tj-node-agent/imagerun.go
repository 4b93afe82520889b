package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// prepareImageContainer is prepareContainer with --image-store: the container runs chrooted in a
// fresh root file system of its pod's image (images.go), in its own mount namespace. Errors: an
// *imagePullError (ErrImagePull), a *createContainerError (the command is not in the image), a
// *configError (user), or another error (ContainerCreating); each with a nil result, so the agent
// retries. On success the caller calls release once the process has exited.
func (w *podWorker) prepareImageContainer(r *containerRun, vols *podVolumes) (p *preparedContainer, release func(), err error) {
	pod := w.latestPod()
	w.mu.Lock()
	ip := w.podIP
	w.mu.Unlock()
	c := r.spec.DeepCopy()
	if err := w.m.puller.ensure(w.ctx, pod, c); err != nil {
		return nil, nil, err
	}
	img, err := w.m.store.config(c.Image)
	if err != nil {
		return nil, nil, err
	}
	mounts, err := containerMounts(c, vols)
	if err != nil {
		return nil, nil, err
	}
	env, err := containerEnv(w.ctx, w.m.src, pod, c, ip, w.m.hostIP(), w.m.serviceEnv)
	if err != nil {
		return nil, nil, err
	}
	vals := map[string]string{}
	for _, e := range env {
		vals[e.Name] = e.Value
	}
	lookup := func(k string) (string, bool) { v, ok := vals[k]; return v, ok }
	// $(VAR) is expanded in the pod's command and args, not in the image's entrypoint and cmd.
	for i := range c.Command {
		c.Command[i] = expand(c.Command[i], lookup)
	}
	for i := range c.Args {
		c.Args[i] = expand(c.Args[i], lookup)
	}
	argv := containerCommand(c, img)
	if len(argv) == 0 {
		return nil, nil, &createContainerError{fmt.Sprintf("no command specified: image %q has no entrypoint or cmd and the container no command", c.Image)}
	}

	root, rel, err := w.m.store.rootfs(c.Image, "tj-"+string(w.uid)+"-"+c.Name)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			rel()
		}
	}()
	uid, gid, home, err := containerUser(pod, c, img, root)
	if err != nil {
		return nil, nil, err
	}
	// The image's environment, then the pod's (which wins), then what a runtime adds.
	envList := append([]string{}, img.Env...)
	for _, e := range env {
		envList = append(envList, e.Name+"="+e.Value)
	}
	for k, v := range map[string]string{"HOSTNAME": pod.Name, "HOME": home, "GRPC_DNS_RESOLVER": "native"} {
		if _, set := vals[k]; !set && !hasEnv(img.Env, k) {
			envList = append(envList, k+"="+v)
		}
	}
	// The agent's own markers (host paths, meaningless inside): tests find a pod's processes by them.
	envList = append(envList, "TJ_NODE_AGENT_ROOT="+w.m.cfg.rootDir, "TJ_NODE_AGENT_POD_DIR="+w.podDir)
	exe, err := findInRoot(root, argv[0], envPATH(envList))
	if err != nil {
		return nil, nil, err
	}
	dir := c.WorkingDir
	if dir == "" {
		dir = img.WorkingDir
	}
	if dir == "" {
		dir = "/"
	}
	binds, err := w.containerBinds(pod.Namespace, mounts)
	if err != nil {
		return nil, nil, err
	}
	wrapExe, wrapArgv, err := wrapForMountNamespace(w.m.self, mountExecSpec{Binds: binds, Exe: exe, Argv: argv, Dir: dir, Root: root, UID: uid, GID: gid,
		Groups: podGroups(pod), NetNS: w.netNSPath()})
	if err != nil {
		return nil, nil, err
	}
	return &preparedContainer{exe: wrapExe, argv: wrapArgv, env: envList, dir: w.podDir, mountNS: true}, rel, nil
}

// podGroups: the supplementary groups a kubelet gives every container of the pod, its fsGroup
// (which owns its volumes: a checkpoint claim is root:<fsGroup> 2775) and its supplementalGroups.
func podGroups(pod *corev1.Pod) []int {
	sc := pod.Spec.SecurityContext
	if sc == nil {
		return nil
	}
	var groups []int
	if sc.FSGroup != nil {
		groups = append(groups, int(*sc.FSGroup))
	}
	for _, g := range sc.SupplementalGroups {
		groups = append(groups, int(g))
	}
	return groups
}

func hasEnv(env []string, name string) bool {
	for _, e := range env {
		if strings.HasPrefix(e, name+"=") {
			return true
		}
	}
	return false
}

// prepare is prepareImageContainer with --image-store, else prepareContainer (host binaries);
// release is never nil.
func (w *podWorker) prepare(r *containerRun, vols *podVolumes) (*preparedContainer, func(), error) {
	if w.m.store == nil {
		p, err := w.prepareContainer(r, vols)
		return p, func() {}, err
	}
	p, release, err := w.prepareImageContainer(r, vols)
	if release == nil {
		release = func() {}
	}
	return p, release, err
}

// imageNotReady reports an image the store lacks as the kubelet does (ErrImagePull at each
// attempt, ImagePullBackOff while it waits, the wait doubling up to --restart-backoff-max) and a
// command the image lacks as CreateContainerError; true means try again.
func (w *podWorker) imageNotReady(r *containerRun, err error, pullBackoff *time.Duration) bool {
	var ipe *imagePullError
	var cce *createContainerError
	switch {
	case errors.As(err, &ipe):
		klog.Warningf("pod %s container %s: %v", w.key(), r.spec.Name, err)
		w.setWaiting(r, "ErrImagePull", err.Error())
		w.publish()
		// As the kubelet since 1.32 (kubernetes#127918): the back-off says what the last pull said.
		w.setWaiting(r, "ImagePullBackOff", fmt.Sprintf("Back-off pulling image %q: ErrImagePull: %v", r.spec.Image, err))
		w.publish()
		w.sleep(*pullBackoff)
		*pullBackoff = min(2**pullBackoff, w.m.cfg.backoffMax)
		return true
	case errors.As(err, &cce):
		klog.Warningf("pod %s container %s: %v", w.key(), r.spec.Name, err)
		w.setWaiting(r, "CreateContainerError", err.Error())
		w.publish()
		w.sleep(2 * time.Second)
		return true
	}
	return false
}
