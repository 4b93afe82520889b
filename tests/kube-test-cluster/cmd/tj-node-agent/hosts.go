package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// There is no cluster DNS here. Instead the agent keeps one hosts file per namespace,
// <root>/hosts/<namespace>, bind-mounted over /etc/hosts in the containers of that namespace's
// pods (see mountns.go), with what cluster DNS would answer for headless Services:
//
//	<podIP> <svc>.<ns>.svc.cluster.local <svc>.<ns>.svc <svc>.<ns> [<svc> in its own namespace]
//
// for every pod the Service's selector matches that has an IP, is not terminating or finished, and
// is Ready (or the Service publishes not-ready addresses), and
// <hostname>.<subdomain>.<ns>.svc(.cluster.local) for pods whose spec.subdomain names a headless
// Service. Only the file of a pod's own namespace carries short names, as the DNS search path
// would. ClusterIP Services are left out: nothing routes their virtual IPs on this machine.
//
// The files are rewritten IN PLACE (truncate + write, same inode): a bind mount pins the inode, so
// replacing the file by a rename would leave running containers with the old content.

type hostsFiles struct {
	dir    string
	header string // the host's own /etc/hosts (localhost, the machine's name)

	pods     listersv1.PodLister
	services listersv1.ServiceLister
	kick     chan struct{}

	mu      sync.Mutex
	written map[string]string // namespace -> content last written
}

func newHostsFiles(rootDir string) (*hostsFiles, error) {
	header, err := os.ReadFile("/etc/hosts")
	if err != nil {
		header = []byte("127.0.0.1 localhost\n")
	}
	dir := filepath.Join(rootDir, "hosts")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("hosts files: %v", err)
	}
	h := string(header)
	if !strings.HasSuffix(h, "\n") {
		h += "\n"
	}
	return &hostsFiles{dir: dir, header: h, kick: make(chan struct{}, 1), written: map[string]string{}}, nil
}

// start watches every pod and Service (all namespaces: a Service's pods may run on other nodes).
func (h *hostsFiles) start(ctx context.Context, cs kubernetes.Interface) error {
	f := informers.NewSharedInformerFactory(cs, 0)
	podInf := f.Core().V1().Pods()
	svcInf := f.Core().V1().Services()
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { h.changed() },
		UpdateFunc: func(_, _ any) { h.changed() },
		DeleteFunc: func(any) { h.changed() },
	}
	for _, inf := range []cache.SharedIndexInformer{podInf.Informer(), svcInf.Informer()} {
		if _, err := inf.AddEventHandler(handler); err != nil {
			return err
		}
	}
	h.pods, h.services = podInf.Lister(), svcInf.Lister()
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), podInf.Informer().HasSynced, svcInf.Informer().HasSynced) {
		return fmt.Errorf("hosts files: pod/service informers did not sync")
	}
	h.refresh()
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-h.kick:
				h.refresh()
			}
		}
	}()
	return nil
}

func (h *hostsFiles) changed() {
	select {
	case h.kick <- struct{}{}:
	default:
	}
}

// pathFor returns the hosts file of the namespace, writing it first if it does not exist yet.
func (h *hostsFiles) pathFor(ns string) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.written[ns]; !ok {
		if err := h.writeLocked(ns, h.contentLocked(ns)); err != nil {
			return "", err
		}
	}
	return filepath.Join(h.dir, ns), nil
}

func (h *hostsFiles) refresh() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ns := range h.written {
		if err := h.writeLocked(ns, h.contentLocked(ns)); err != nil {
			klog.Warningf("hosts file of namespace %s: %v", ns, err)
		}
	}
}

func (h *hostsFiles) writeLocked(ns, content string) error {
	if old, ok := h.written[ns]; ok && old == content {
		return nil
	}
	// Rewriting the existing file keeps its inode (and so every bind mount of it) current. It is
	// overwritten from the start and only then cut to the new length, never truncated first: a
	// container resolving a name at that moment (typically a pod told to stop just as its own
	// deletion changes the file) must not find it empty. At worst it reads the new lines followed
	// by the old file's tail, whose first, partial line has no valid address and is skipped.
	f, err := os.OpenFile(filepath.Join(h.dir, ns), os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, werr := f.WriteAt([]byte(content), 0)
	if werr == nil {
		werr = f.Truncate(int64(len(content)))
	}
	cerr := f.Close()
	if werr != nil {
		return werr
	}
	if cerr != nil {
		return cerr
	}
	h.written[ns] = content
	return nil
}

func (h *hostsFiles) contentLocked(ownNS string) string {
	var entries []string
	if h.services != nil {
		svcs, _ := h.services.List(labels.Everything())
		pods, _ := h.pods.List(labels.Everything())
		entries = hostsEntries(ownNS, svcs, pods)
	}
	return h.header + "# tj-node-agent: headless Services and pod subdomains, as cluster DNS would answer\n" +
		strings.Join(entries, "")
}

// servesTraffic: the pod is an endpoint of a Service selecting it.
func servesTraffic(p *corev1.Pod, publishNotReady bool) bool {
	if p.Status.PodIP == "" || p.DeletionTimestamp != nil ||
		p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return false
	}
	if publishNotReady {
		return true
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// hostsEntries computes the lines of the hosts file seen by pods of namespace ownNS (sorted, so the
// content only changes when the answer does).
func hostsEntries(ownNS string, svcs []*corev1.Service, pods []*corev1.Pod) []string {
	var lines []string
	headless := map[string]*corev1.Service{} // ns/name
	for _, s := range svcs {
		if s.Spec.ClusterIP != corev1.ClusterIPNone {
			continue
		}
		headless[s.Namespace+"/"+s.Name] = s
		if len(s.Spec.Selector) == 0 {
			continue
		}
		sel := labels.SelectorFromSet(s.Spec.Selector)
		names := []string{
			fmt.Sprintf("%s.%s.svc.cluster.local", s.Name, s.Namespace),
			fmt.Sprintf("%s.%s.svc", s.Name, s.Namespace),
			fmt.Sprintf("%s.%s", s.Name, s.Namespace),
		}
		if s.Namespace == ownNS {
			names = append(names, s.Name)
		}
		for _, p := range pods {
			if p.Namespace == s.Namespace && sel.Matches(labels.Set(p.Labels)) && servesTraffic(p, s.Spec.PublishNotReadyAddresses) {
				lines = append(lines, p.Status.PodIP+" "+strings.Join(names, " ")+"\n")
			}
		}
	}
	for _, p := range pods {
		if p.Spec.Hostname == "" || p.Spec.Subdomain == "" {
			continue
		}
		s, ok := headless[p.Namespace+"/"+p.Spec.Subdomain]
		if !ok || !servesTraffic(p, s.Spec.PublishNotReadyAddresses) {
			continue
		}
		fq := fmt.Sprintf("%s.%s.%s.svc", p.Spec.Hostname, p.Spec.Subdomain, p.Namespace)
		lines = append(lines, p.Status.PodIP+" "+fq+".cluster.local "+fq+"\n")
	}
	sort.Strings(lines)
	return lines
}
