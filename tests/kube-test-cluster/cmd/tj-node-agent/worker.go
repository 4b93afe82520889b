package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// containerRun is the agent's view of one container of the pod across its restarts.
type containerRun struct {
	spec      corev1.Container
	isInit    bool
	status    corev1.ContainerStatus
	ranBefore bool // the next start is a restart (restartCount++)
	final     bool // will not run again
	finalExit int32
	proc      *process
}

// podWorker runs one pod: IP, volumes, init containers in order, then the containers in parallel,
// each restarted per restartPolicy with backoff; on deletion SIGTERM, grace period, SIGKILL, then
// the final delete (grace 0) as the kubelet does.
type podWorker struct {
	m    *podManager
	uid  types.UID
	ns   string
	name string
	ctx  context.Context

	mu          sync.Mutex
	pod         *corev1.Pod // latest seen
	podIP       string
	netNS       string // the pod's network namespace file (--pod-network=netns), "" for the node's
	startTime   metav1.Time
	volsReady   bool
	initialized bool
	initFailed  bool
	inits       []*containerRun
	ctrs        []*containerRun
	deadline    time.Time // SIGKILL time once stopping
	deleting    bool      // the API asked for deletion (deletionTimestamp)

	stopping chan struct{} // closed on deletion, object gone or agent shutdown
	stopOnce sync.Once
	gone     chan struct{}
	goneOnce sync.Once
	done     chan struct{} // run() returned

	statusMu sync.Mutex // one status write at a time
	podDir   string
}

func now() metav1.Time { return metav1.NewTime(time.Now().Truncate(time.Second)) }

func newPodWorker(m *podManager, pod *corev1.Pod) *podWorker {
	w := &podWorker{m: m, uid: pod.UID, ns: pod.Namespace, name: pod.Name, ctx: m.ctx, pod: pod, stopping: make(chan struct{}), gone: make(chan struct{}),
		done: make(chan struct{}), podDir: m.podDir(pod)}
	for _, c := range pod.Spec.InitContainers {
		w.inits = append(w.inits, &containerRun{spec: c, isInit: true})
	}
	for _, c := range pod.Spec.Containers {
		w.ctrs = append(w.ctrs, &containerRun{spec: c})
	}
	w.seed(pod)
	return w
}

func (w *podWorker) key() string { return w.ns + "/" + w.name }

// seed takes over restart counts and states from the pod's status (agent restarted). A container the
// status says is running was lost with the previous agent: it counts as terminated (137) and its
// restart policy applies.
func (w *podWorker) seed(pod *corev1.Pod) {
	lost := func(run *corev1.ContainerStateRunning) *corev1.ContainerStateTerminated {
		return &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "Error", StartedAt: run.StartedAt, FinishedAt: now(),
			Message: "tj-node-agent restarted: the process was lost"}
	}
	apply := func(runs []*containerRun, old []corev1.ContainerStatus) {
		for _, r := range runs {
			r.status = corev1.ContainerStatus{Name: r.spec.Name, Image: r.spec.Image, ImageID: "tj-node-agent://" + r.spec.Image,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}
			if r.isInit {
				r.status.State.Waiting.Reason = "PodInitializing"
			}
			for _, o := range old {
				if o.Name != r.spec.Name {
					continue
				}
				r.status.RestartCount = o.RestartCount
				r.status.LastTerminationState = o.LastTerminationState
				r.ranBefore = o.State.Running != nil || o.State.Terminated != nil || o.LastTerminationState.Terminated != nil
				term := o.State.Terminated
				if o.State.Running != nil {
					term = lost(o.State.Running)
				}
				if term != nil {
					r.status.State = corev1.ContainerState{Terminated: term}
					if !w.shouldRestart(r, term.ExitCode) {
						r.final, r.finalExit = true, term.ExitCode
					} else {
						r.status.LastTerminationState = corev1.ContainerState{Terminated: term}
					}
				}
			}
		}
	}
	apply(w.inits, pod.Status.InitContainerStatuses)
	apply(w.ctrs, pod.Status.ContainerStatuses)
	if pod.Status.StartTime != nil {
		w.startTime = *pod.Status.StartTime
	} else {
		w.startTime = now()
	}
}

func (w *podWorker) shouldRestart(r *containerRun, exit int32) bool {
	switch w.pod.Spec.RestartPolicy {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return exit != 0
	default: // Always; an init container is only re-run until it succeeds
		return !r.isInit || exit != 0
	}
}

func (w *podWorker) update(pod *corev1.Pod) {
	w.mu.Lock()
	w.pod = pod
	w.mu.Unlock()
	if pod.DeletionTimestamp != nil {
		grace := int64(30)
		if pod.DeletionGracePeriodSeconds != nil {
			grace = *pod.DeletionGracePeriodSeconds
		} else if pod.Spec.TerminationGracePeriodSeconds != nil {
			grace = *pod.Spec.TerminationGracePeriodSeconds
		}
		w.requestStop(time.Now().Add(time.Duration(grace)*time.Second), true)
	}
}

func (w *podWorker) objectGone() {
	w.requestStop(time.Now().Add(2*time.Second), false)
	w.goneOnce.Do(func() { close(w.gone) })
}

func (w *podWorker) requestStop(deadline time.Time, deleting bool) {
	w.mu.Lock()
	if deleting {
		w.deleting = true
	}
	first := w.deadline.IsZero()
	if first || deadline.Before(w.deadline) {
		w.deadline = deadline
	}
	w.mu.Unlock()
	if first {
		klog.Infof("pod %s: stopping (SIGKILL at %s)", w.key(), deadline.Format(time.TimeOnly))
	}
	w.stopOnce.Do(func() { close(w.stopping) })
}

func (w *podWorker) isStopping() bool {
	select {
	case <-w.stopping:
		return true
	default:
		return false
	}
}

func (w *podWorker) killDeadline() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.deadline
}

// killProcesses is the agent shutting down: stop everything, write nothing.
func (w *podWorker) killProcesses(deadline time.Time) {
	w.requestStop(deadline, false)
	select {
	case <-w.done:
	case <-time.After(time.Until(deadline) + 5*time.Second):
		klog.Warningf("pod %s: worker did not finish after SIGKILL", w.key())
	}
}

// sleep waits d or until stopping; false if stopping.
func (w *podWorker) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-w.stopping:
		return false
	}
}

func (w *podWorker) run() {
	defer func() {
		w.mu.Lock()
		ip, netNS := w.podIP, w.netNS
		w.mu.Unlock()
		if netNS != "" {
			w.m.net.remove(ip)
		}
		w.m.ips.release(string(w.uid))
		close(w.done)
	}()
	pod := w.latestPod()
	terminal := pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
	if !terminal && !w.isStopping() {
		w.runPod(pod)
		w.publish()
	}
	// Finished: wait for the deletion request (or the object's removal, or agent shutdown).
	select {
	case <-w.stopping:
	case <-w.gone:
	case <-w.ctx.Done():
	}
	w.mu.Lock()
	deleting := w.deleting
	w.mu.Unlock()
	if deleting && w.ctx.Err() == nil && !w.objectIsGone() {
		w.finalDelete()
	}
}

func (w *podWorker) objectIsGone() bool {
	select {
	case <-w.gone:
		return true
	default:
		return false
	}
}

func (w *podWorker) netNSPath() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.netNS
}

func (w *podWorker) latestPod() *corev1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pod
}

func (w *podWorker) runPod(pod *corev1.Pod) {
	ip := pod.Status.PodIP
	if ip == "" || !w.m.ips.reserve(string(w.uid), ip) {
		var err error
		for {
			if ip, err = w.m.ips.allocate(string(w.uid)); err == nil {
				break
			}
			w.setAllWaiting("ContainerCreating", err.Error())
			w.publish()
			if !w.sleep(2 * time.Second) {
				return
			}
		}
	}
	w.mu.Lock()
	w.podIP = ip
	w.mu.Unlock()
	if w.m.net != nil && !pod.Spec.HostNetwork {
		for {
			err := w.m.net.setup(ip)
			if err == nil {
				break
			}
			klog.Warningf("pod %s: network namespace: %v", w.key(), err)
			w.setAllWaiting("ContainerCreating", "pod network: "+err.Error())
			w.publish()
			if !w.sleep(2 * time.Second) {
				return
			}
		}
		w.mu.Lock()
		w.netNS = w.m.net.nsPath(ip)
		w.mu.Unlock()
	}
	klog.Infof("pod %s: IP %s, dir %s", w.key(), ip, w.podDir)
	w.publish()

	var vols *podVolumes
	for {
		var err error
		vols, err = prepareVolumes(w.ctx, w.m.cs, w.m.src, pod, w.podDir, ip, w.m.hostIP(), w.m.cfg.tokenExpiration)
		if err == nil {
			break
		}
		reason := "ContainerCreating"
		var ce *configError
		if errors.As(err, &ce) {
			reason = "CreateContainerConfigError"
		}
		klog.Warningf("pod %s: volumes: %v", w.key(), err)
		w.setAllWaiting(reason, err.Error())
		w.publish()
		if !w.sleep(2 * time.Second) {
			return
		}
	}
	w.mu.Lock()
	w.volsReady = true
	w.mu.Unlock()
	go w.refreshTokens(pod, vols)

	for _, r := range w.inits {
		if r.final && r.finalExit == 0 {
			continue
		}
		if r.final || w.runContainer(r, vols) != 0 {
			w.mu.Lock()
			w.initFailed = true
			w.mu.Unlock()
			return
		}
		if w.isStopping() {
			return
		}
	}
	w.mu.Lock()
	w.initialized = true
	w.mu.Unlock()
	w.publish()

	var wg sync.WaitGroup
	for _, r := range w.ctrs {
		if r.final {
			continue
		}
		wg.Add(1)
		go func() { defer wg.Done(); w.runContainer(r, vols) }()
	}
	wg.Wait()
}

func (w *podWorker) setAllWaiting(reason, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range append(append([]*containerRun{}, w.inits...), w.ctrs...) {
		if r.status.State.Running == nil && !r.final {
			r.status.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}
		}
	}
}

func (w *podWorker) refreshTokens(pod *corev1.Pod, vols *podVolumes) {
	for len(vols.tokens) > 0 {
		next := vols.tokens[0]
		for _, t := range vols.tokens[1:] {
			if t.dueAt().Before(next.dueAt()) {
				next = t
			}
		}
		t := time.NewTimer(time.Until(next.dueAt()))
		select {
		case <-t.C:
		case <-w.done:
			t.Stop()
			return
		case <-w.ctx.Done():
			t.Stop()
			return
		}
		if err := refreshToken(w.ctx, w.m.cs, pod, next); err != nil {
			klog.Warningf("pod %s: %v (retrying in 10s)", w.key(), err)
			next.issued, next.expires = time.Now(), time.Now().Add(12500*time.Millisecond)
		}
	}
}

// runContainer runs r until it is final (restart policy says no more, or the pod is stopping) and
// returns its last exit code.
func (w *podWorker) runContainer(r *containerRun, vols *podVolumes) int32 {
	backoff := w.m.cfg.backoffInitial
	pullBackoff := w.m.cfg.backoffInitial
	for {
		if w.isStopping() {
			return w.finish(r, nil)
		}
		spec, release, err := w.prepare(r, vols)
		if w.imageNotReady(r, err, &pullBackoff) {
			continue
		}
		var ce *configError
		if errors.As(err, &ce) {
			klog.Warningf("pod %s container %s: %v", w.key(), r.spec.Name, err)
			w.setWaiting(r, "CreateContainerConfigError", err.Error())
			w.publish()
			w.sleep(2 * time.Second)
			continue
		}
		if err != nil && spec == nil {
			w.setWaiting(r, "ContainerCreating", err.Error())
			w.publish()
			w.sleep(2 * time.Second)
			continue
		}
		w.mu.Lock()
		if r.ranBefore {
			r.status.RestartCount++
		}
		r.ranBefore = true
		restarts := r.status.RestartCount
		w.mu.Unlock()
		cid := fmt.Sprintf("tj-node-agent://%s/%s/%d", w.uid, r.spec.Name, restarts)
		var term *corev1.ContainerStateTerminated
		var p *process
		if err == nil {
			logDir := filepath.Join(w.podDir, "logs", r.spec.Name)
			if err = ensureDir(logDir); err == nil {
				p, err = startProcess(spec.exe, spec.argv, spec.env, spec.dir, filepath.Join(logDir, fmt.Sprintf("%d.log", restarts)), spec.mountNS)
			}
		}
		if err != nil {
			release()
			// As a runtime reports a container that could not start.
			klog.Warningf("pod %s container %s: start: %v", w.key(), r.spec.Name, err)
			t := now()
			term = &corev1.ContainerStateTerminated{ExitCode: 128, Reason: "StartError", Message: err.Error(), StartedAt: t, FinishedAt: t, ContainerID: cid}
		} else {
			w.mu.Lock()
			r.proc = p
			r.status.ContainerID = cid
			r.status.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(p.started.Truncate(time.Second))}}
			r.status.Ready = !r.isInit
			started := true
			r.status.Started = &started
			w.mu.Unlock()
			klog.Infof("pod %s container %s: started pid %d (restart %d): %s", w.key(), r.spec.Name, p.cmd.Process.Pid, restarts, strings.Join(spec.argv, " "))
			w.publish()
			select {
			case <-p.exited:
			case <-w.stopping:
				p.stop(w.killDeadline())
			}
			<-p.exited
			release()
			code := p.exitCode()
			reason := "Completed"
			if code != 0 {
				reason = "Error"
			}
			term = &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, ContainerID: cid,
				StartedAt: metav1.NewTime(p.started.Truncate(time.Second)), FinishedAt: metav1.NewTime(p.ended.Truncate(time.Second))}
			klog.Infof("pod %s container %s: exited %d", w.key(), r.spec.Name, code)
		}
		w.mu.Lock()
		r.proc = nil
		r.status.Ready = false
		notStarted := false
		r.status.Started = &notStarted
		r.status.State = corev1.ContainerState{Terminated: term}
		w.mu.Unlock()
		if w.isStopping() || !w.shouldRestart(r, term.ExitCode) {
			return w.finish(r, term)
		}
		w.mu.Lock()
		r.status.LastTerminationState = corev1.ContainerState{Terminated: term}
		r.status.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
			Message: fmt.Sprintf("back-off %v restarting failed container=%s pod=%s", backoff, r.spec.Name, w.name)}}
		w.mu.Unlock()
		w.publish()
		if !w.sleep(backoff) {
			w.mu.Lock()
			r.status.State = corev1.ContainerState{Terminated: term}
			r.status.LastTerminationState = corev1.ContainerState{}
			w.mu.Unlock()
			return w.finish(r, term)
		}
		backoff = min(2*backoff, w.m.cfg.backoffMax)
	}
}

// finish marks r final; term nil means it never ran in this pod's life here (stopped before start).
func (w *podWorker) finish(r *containerRun, term *corev1.ContainerStateTerminated) int32 {
	w.mu.Lock()
	r.final = true
	if term == nil {
		if t := r.status.State.Terminated; t != nil {
			term = t
		} else {
			t := now()
			term = &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "ContainerStatusUnknown", StartedAt: t, FinishedAt: t,
				Message: "the pod was stopped before the container started"}
			r.status.State = corev1.ContainerState{Terminated: term}
		}
	}
	r.finalExit = term.ExitCode
	w.mu.Unlock()
	w.publish()
	return term.ExitCode
}

func (w *podWorker) setWaiting(r *containerRun, reason, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r.status.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}
}

type preparedContainer struct {
	exe     string
	argv    []string
	env     []string
	dir     string
	mountNS bool // run in a new mount namespace (exe is the wrapper)
}

// prepareContainer resolves env, command and paths for one start. An error with a non-nil result is
// a start error (terminated, exit 128); with a nil result the agent retries.
func (w *podWorker) prepareContainer(r *containerRun, vols *podVolumes) (*preparedContainer, error) {
	pod := w.latestPod()
	w.mu.Lock()
	ip := w.podIP
	w.mu.Unlock()
	c := &r.spec
	mounts, err := containerMounts(c, vols)
	if err != nil {
		return nil, err
	}
	env, err := containerEnv(w.ctx, w.m.src, pod, c, ip, w.m.hostIP(), w.m.serviceEnv)
	if err != nil {
		return nil, err
	}
	vals := map[string]string{}
	for _, e := range env {
		vals[e.Name] = e.Value
	}
	lookup := func(k string) (string, bool) { v, ok := vals[k]; return v, ok }
	// With mount namespaces the volumes are at their container paths: nothing to rewrite.
	mountNS := w.m.hosts != nil
	rewrite := func(s string) string {
		if w.m.cfg.rewriteMounts && !mountNS {
			return rewritePaths(s, mounts)
		}
		return s
	}
	var argv []string
	for _, a := range append(append([]string{}, c.Command...), c.Args...) {
		argv = append(argv, rewrite(expand(a, lookup)))
	}
	// Without a command the image's entrypoint (a file in the image map) runs with args.
	exeArgv := argv
	if len(c.Command) == 0 {
		exeArgv = nil
	}
	hostPATH := os.Getenv("PATH")
	if e, ok := w.m.images.lookup(c.Image); ok && e.isDir {
		hostPATH = e.target + string(filepath.ListSeparator) + hostPATH
	}
	exe, rerr := w.m.images.resolve(c.Image, exeArgv, hostPATH)
	if len(c.Command) == 0 && rerr == nil {
		argv = append([]string{exe}, argv...)
	}
	dir := w.podDir
	if c.WorkingDir != "" {
		dir = rewrite(c.WorkingDir)
	}
	saDir := ""
	for _, m := range mounts {
		if m.containerPath == serviceAccountMountPath {
			saDir = m.hostPath
		}
	}
	// Base environment (an image would supply PATH, HOME, HOSTNAME), then the pod's, then the agent's
	// own variables, which win.
	// GRPC_DNS_RESOLVER=native: gRPC resolves through getaddrinfo, which reads /etc/hosts (the
	// agent's Service names); its default c-ares resolver would ask a DNS server there is none of.
	base := map[string]string{"PATH": hostPATH, "HOME": w.podDir, "HOSTNAME": pod.Name, "GRPC_DNS_RESOLVER": "native"}
	var envList []string
	for _, k := range []string{"PATH", "HOME", "HOSTNAME", "GRPC_DNS_RESOLVER"} {
		if _, set := vals[k]; !set {
			envList = append(envList, k+"="+base[k])
		}
	}
	for _, e := range env {
		envList = append(envList, e.Name+"="+rewrite(e.Value))
	}
	envList = append(envList,
		"TJ_NODE_AGENT_ROOT="+w.m.cfg.rootDir,
		"TJ_NODE_AGENT_POD_DIR="+w.podDir,
		"TJ_NODE_AGENT_MOUNTS="+mountsEnv(mounts))
	if saDir != "" {
		envList = append(envList, "TJ_INCLUSTER_DIR="+saDir)
	}
	p := &preparedContainer{exe: exe, argv: argv, env: envList, dir: dir}
	if rerr != nil {
		return p, rerr
	}
	if mountNS {
		binds, err := w.containerBinds(pod.Namespace, mounts)
		if err != nil {
			return p, err
		}
		if p.exe, p.argv, err = wrapForMountNamespace(w.m.self, mountExecSpec{Binds: binds, Exe: exe, Argv: argv, Dir: dir, NetNS: w.netNSPath()}); err != nil {
			return p, err
		}
		p.dir = w.podDir
		p.mountNS = true
	}
	return p, nil
}

// containerBinds: the namespace's hosts file over /etc/hosts, the --shared-dir directories, then the
// container's volumes at their mount paths.
func (w *podWorker) containerBinds(ns string, mounts []mount) ([]bindMount, error) {
	hostsPath, err := w.m.hosts.pathFor(ns)
	if err != nil {
		return nil, fmt.Errorf("hosts file: %v", err)
	}
	binds := []bindMount{{Source: hostsPath, Target: "/etc/hosts", ReadOnly: true}}
	for _, sd := range w.m.cfg.sharedDirs {
		cp, hp, _ := strings.Cut(sd, "=")
		binds = append(binds, bindMount{Source: hp, Target: cp})
	}
	for _, m := range mounts {
		binds = append(binds, bindMount{Source: m.hostPath, Target: m.containerPath, ReadOnly: m.readOnly})
	}
	sortBinds(binds)
	return binds, nil
}

// buildStatus computes the pod status from the worker's state over the one in the API: conditions of
// other writers (PodScheduled, DisruptionTarget, ...) are kept.
func (w *podWorker) buildStatus(old corev1.PodStatus) corev1.PodStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := *old.DeepCopy()
	st.HostIP = w.m.hostIP()
	st.HostIPs = []corev1.HostIP{{IP: st.HostIP}}
	if w.podIP != "" {
		st.PodIP = w.podIP
		st.PodIPs = []corev1.PodIP{{IP: w.podIP}}
	}
	st.StartTime = &w.startTime
	if old.Phase != corev1.PodSucceeded && old.Phase != corev1.PodFailed {
		st.Phase = w.phaseLocked()
	}
	allRunning := len(w.ctrs) > 0
	for _, r := range w.ctrs {
		if r.status.State.Running == nil {
			allRunning = false
		}
	}
	ready := allRunning && st.Phase == corev1.PodRunning
	readyReason := "ContainersNotReady"
	if st.Phase == corev1.PodSucceeded || st.Phase == corev1.PodFailed {
		readyReason = "PodCompleted"
	}
	setCond := func(t corev1.PodConditionType, ok bool, reason string) {
		s := corev1.ConditionFalse
		if ok {
			s, reason = corev1.ConditionTrue, ""
		}
		for i := range st.Conditions {
			if st.Conditions[i].Type == t {
				if st.Conditions[i].Status != s {
					st.Conditions[i].LastTransitionTime = now()
				}
				st.Conditions[i].Status, st.Conditions[i].Reason = s, reason
				return
			}
		}
		st.Conditions = append(st.Conditions, corev1.PodCondition{Type: t, Status: s, Reason: reason, LastTransitionTime: now()})
	}
	setCond(corev1.PodReadyToStartContainers, w.volsReady && w.podIP != "", "")
	setCond(corev1.PodInitialized, w.initialized || len(w.inits) == 0, "ContainersNotInitialized")
	setCond(corev1.ContainersReady, ready, readyReason)
	setCond(corev1.PodReady, ready, readyReason)
	st.InitContainerStatuses = nil
	for _, r := range w.inits {
		st.InitContainerStatuses = append(st.InitContainerStatuses, *r.status.DeepCopy())
	}
	st.ContainerStatuses = nil
	for _, r := range w.ctrs {
		st.ContainerStatuses = append(st.ContainerStatuses, *r.status.DeepCopy())
	}
	return st
}

func (w *podWorker) phaseLocked() corev1.PodPhase {
	if w.initFailed {
		return corev1.PodFailed
	}
	if !w.initialized && len(w.inits) > 0 {
		return corev1.PodPending
	}
	allFinal, allOK, anyRan := true, true, false
	for _, r := range w.ctrs {
		if !r.final {
			allFinal = false
		} else if r.finalExit != 0 {
			allOK = false
		}
		if r.ranBefore {
			anyRan = true
		}
	}
	switch {
	case allFinal && allOK:
		return corev1.PodSucceeded
	case allFinal:
		return corev1.PodFailed
	case anyRan:
		return corev1.PodRunning
	}
	return corev1.PodPending
}

// publish writes the status through pods/status, retrying on conflicts with a fresh read.
func (w *podWorker) publish() {
	w.statusMu.Lock()
	defer w.statusMu.Unlock()
	pods := w.m.cs.CoreV1().Pods(w.ns)
	base := w.latestPod()
	for attempt := 0; attempt < 8 && w.ctx.Err() == nil && !w.objectIsGone(); attempt++ {
		if attempt > 0 {
			fresh, err := pods.Get(w.ctx, w.name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return
			}
			if err != nil {
				klog.Warningf("pod %s: get for status: %v", w.key(), err)
				time.Sleep(300 * time.Millisecond)
				continue
			}
			if fresh.UID != w.uid {
				return
			}
			base = fresh
		}
		np := base.DeepCopy()
		np.Status = w.buildStatus(base.Status)
		if equality.Semantic.DeepEqual(np.Status, base.Status) {
			return
		}
		res, err := pods.UpdateStatus(w.ctx, np, metav1.UpdateOptions{})
		if err == nil {
			w.mu.Lock()
			w.pod = res
			w.mu.Unlock()
			return
		}
		if apierrors.IsNotFound(err) {
			return
		}
		if !apierrors.IsConflict(err) {
			klog.Warningf("pod %s: update status: %v", w.key(), err)
			time.Sleep(300 * time.Millisecond)
		}
	}
}

// finalDelete removes the pod object once its processes are gone, as the kubelet does.
func (w *podWorker) finalDelete() {
	w.publish()
	zero := int64(0)
	uid := w.uid
	for attempt := 1; ; attempt++ {
		err := w.m.cs.CoreV1().Pods(w.ns).Delete(w.ctx, w.name, metav1.DeleteOptions{
			GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &uid}})
		if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			klog.Infof("pod %s: deleted", w.key())
			return
		}
		klog.Warningf("pod %s: final delete (attempt %d): %v", w.key(), attempt, err)
		if attempt == 10 || w.ctx.Err() != nil {
			return
		}
		select {
		case <-time.After(time.Second):
		case <-w.gone:
			return
		case <-w.ctx.Done():
			return
		}
	}
}
