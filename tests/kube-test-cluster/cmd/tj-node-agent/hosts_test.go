package main

import (
	"os"
	"reflect"
	"strings"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func testPod(ns, name, ip string, lbls map[string]string, ready bool) *corev1.Pod {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls},
		Status: corev1.PodStatus{PodIP: ip, Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}},
	}
}

func headlessService(ns, name string, sel map[string]string, publishNotReady bool) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: sel, PublishNotReadyAddresses: publishNotReady}}
}

func TestHostsEntriesLikeClusterDNS(t *testing.T) {
	ps := map[string]string{"replica": "ps-0"}
	wk := map[string]string{"replica": "worker-0"}
	finished := testPod("jobs", "done", "127.0.0.9", ps, true)
	finished.Status.Phase = corev1.PodSucceeded
	terminating := testPod("jobs", "going", "127.0.0.8", ps, true)
	now := metav1.Now()
	terminating.DeletionTimestamp = &now
	sub := testPod("jobs", "sub-0", "127.0.0.7", map[string]string{"app": "sub"}, true)
	sub.Spec.Hostname, sub.Spec.Subdomain = "sub-0", "group"
	svcs := []*corev1.Service{
		headlessService("jobs", "job-ps-0", ps, false),
		headlessService("jobs", "job-worker-0", wk, true), // publishes its not-ready pod
		headlessService("jobs", "group", map[string]string{"app": "none"}, false),
		{ObjectMeta: metav1.ObjectMeta{Namespace: "jobs", Name: "clusterip"},
			Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.1", Selector: ps}},
	}
	pods := []*corev1.Pod{
		testPod("jobs", "ps", "127.0.0.2", ps, true),
		testPod("jobs", "ps-unready", "127.0.0.3", ps, false), // not ready: left out
		testPod("jobs", "worker", "127.0.0.4", wk, false),
		testPod("other", "ps-elsewhere", "127.0.0.5", ps, true), // other namespace: not selected
		testPod("jobs", "no-ip", "", ps, true),
		finished, terminating, sub,
	}
	got := hostsEntries("jobs", svcs, pods)
	want := []string{
		"127.0.0.2 job-ps-0.jobs.svc.cluster.local job-ps-0.jobs.svc job-ps-0.jobs job-ps-0\n",
		"127.0.0.4 job-worker-0.jobs.svc.cluster.local job-worker-0.jobs.svc job-worker-0.jobs job-worker-0\n",
		"127.0.0.7 sub-0.group.jobs.svc.cluster.local sub-0.group.jobs.svc\n",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("hostsEntries(jobs) =\n%q\nwant\n%q", got, want)
	}
	// Seen from another namespace: no short names.
	other := hostsEntries("other", svcs, pods)
	if len(other) != 3 || !strings.HasSuffix(other[0], " job-ps-0.jobs\n") {
		t.Errorf("hostsEntries(other) = %q, want the qualified names only", other)
	}
}

func TestHostsFileRewrittenInPlace(t *testing.T) {
	h, err := newHostsFiles(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p, err := h.pathFor("ns")
	if err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(p)
	h.mu.Lock()
	err = h.writeLocked("ns", "127.0.0.2 changed\n")
	h.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(p)
	if before.Sys().(*syscall.Stat_t).Ino != after.Sys().(*syscall.Stat_t).Ino {
		t.Errorf("the hosts file got a new inode: a bind mount of it would keep the old content")
	}
	if data, _ := os.ReadFile(p); string(data) != "127.0.0.2 changed\n" {
		t.Errorf("content %q", data)
	}
	// Overwritten from the start, then cut: a shorter rewrite leaves no tail of the longer one.
	h.mu.Lock()
	err = h.writeLocked("ns", "127.0.0.3 a-much-longer-name.ns.svc.cluster.local a-much-longer-name\n")
	if err == nil {
		err = h.writeLocked("ns", "127.0.0.4 short\n")
	}
	h.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(p); string(data) != "127.0.0.4 short\n" {
		t.Errorf("content after a shorter rewrite %q", data)
	}
}

func TestSortBindsParentsFirst(t *testing.T) {
	binds := []bindMount{{Target: "/a/b/c"}, {Target: "/etc/hosts"}, {Target: "/a"}, {Target: "/a/b"}}
	sortBinds(binds)
	var got []string
	for _, b := range binds {
		got = append(got, b.Target)
	}
	if want := "/a /etc/hosts /a/b /a/b/c"; strings.Join(got, " ") != want {
		t.Errorf("order %v, want %s: a parent must come before its children", got, want)
	}
}
