package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// podManager watches the pods bound to this node (field selector spec.nodeName) and keeps one
// podWorker per pod UID.
type podManager struct {
	cfg        *config
	cs         kubernetes.Interface
	images     *imageMap
	ips        *ipAllocator
	serviceEnv []corev1.EnvVar
	src        objectSource
	hosts      *hostsFiles  // nil: no mount namespaces (no /etc/hosts, path rewriting instead)
	self       string       // this executable, the mount namespace wrapper
	store      imageStore   // nil: host binaries (--image-map); else images (--image-store)
	puller     *imagePuller // nil: nothing is pulled (no --pull-registry)
	net        *podNetwork  // nil: pods share the node's network (--pod-network=host)

	mu      sync.Mutex
	workers map[types.UID]*podWorker // by UID while the object exists
	live    map[*podWorker]struct{}  // run() not returned yet (processes may exist)
	ctx     context.Context
}

func newPodManager(cfg *config, cs kubernetes.Interface, images *imageMap, ips *ipAllocator, serviceEnv []corev1.EnvVar) *podManager {
	self, _ := os.Executable()
	return &podManager{cfg: cfg, cs: cs, images: images, ips: ips, serviceEnv: serviceEnv, src: objectSource{cs}, self: self,
		workers: map[types.UID]*podWorker{}, live: map[*podWorker]struct{}{}}
}

func (m *podManager) start(ctx context.Context) error {
	m.ctx = ctx
	sel := fields.OneTermEqualSelector("spec.nodeName", m.cfg.nodeName).String()
	f := informers.NewSharedInformerFactoryWithOptions(m.cs, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = sel }))
	inf := f.Core().V1().Pods().Informer()
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { m.observe(obj.(*corev1.Pod)) },
		UpdateFunc: func(_, obj any) { m.observe(obj.(*corev1.Pod)) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if p, ok := obj.(*corev1.Pod); ok {
				m.forget(p)
			}
		},
	})
	if err != nil {
		return err
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return fmt.Errorf("pod informer (%s) did not sync", sel)
	}
	return nil
}

func (m *podManager) observe(pod *corev1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ctx.Err() != nil {
		return
	}
	w, ok := m.workers[pod.UID]
	if !ok {
		w = newPodWorker(m, pod)
		m.workers[pod.UID] = w
		m.live[w] = struct{}{}
		go func() {
			w.run()
			m.mu.Lock()
			delete(m.live, w)
			m.mu.Unlock()
		}()
	}
	w.update(pod)
}

// forget: the pod object is gone from the API (deleted by us after termination, or force-deleted).
func (m *podManager) forget(pod *corev1.Pod) {
	m.mu.Lock()
	w := m.workers[pod.UID]
	delete(m.workers, pod.UID)
	m.mu.Unlock()
	if w != nil {
		w.objectGone()
	}
}

// killAll stops every pod's processes (agent shutdown), SIGKILL after grace, and waits.
func (m *podManager) killAll(grace time.Duration) {
	m.mu.Lock()
	ws := make([]*podWorker, 0, len(m.live))
	for w := range m.live {
		ws = append(ws, w)
	}
	m.mu.Unlock()
	deadline := time.Now().Add(grace)
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Add(1)
		go func() { defer wg.Done(); w.killProcesses(deadline) }()
	}
	wg.Wait()
}

// hostIP is the node's address as a pod reaches it: 127.0.0.1 is a pod's own in its namespace.
func (m *podManager) hostIP() string {
	if m.net != nil {
		return m.net.gateway
	}
	return "127.0.0.1"
}

func (m *podManager) podDir(pod *corev1.Pod) string {
	return filepath.Join(m.cfg.rootDir, "pods", fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID))
}

// ensureDir is a tiny helper for the worker.
func ensureDir(p string) error { return os.MkdirAll(p, 0o755) }
