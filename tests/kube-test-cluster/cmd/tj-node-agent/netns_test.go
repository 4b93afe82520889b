package main

import (
	"strings"
	"testing"
)

func TestLinkNameIsUniquePerPodIPAndFitsLinux(t *testing.T) {
	for ip, want := range map[string]string{
		"127.0.44.2":    "tjv002c02",
		"127.0.44.254":  "tjv002cfe",
		"127.1.0.2":     "tjv010002",
		"127.255.255.1": "tjvffff01",
	} {
		got := linkName(ip)
		if got != want {
			t.Errorf("linkName(%s) = %q, want %q", ip, got, want)
		}
		if len(got) > 15 {
			t.Errorf("linkName(%s) = %q: longer than Linux's 15 characters", ip, got)
		}
	}
}

func TestPodNetworkRefusesAGatewayThatIsEveryPodsLocalhost(t *testing.T) {
	if _, err := newPodNetwork("127.0.0.", 2); err == nil || !strings.Contains(err.Error(), "127.0.0.1") {
		t.Errorf("base 127.0.0.: err = %v, want one naming 127.0.0.1", err)
	}
	if _, err := newPodNetwork("127.0.44.", 1); err == nil || !strings.Contains(err.Error(), "--pod-ip-first") {
		t.Errorf("first 1: err = %v, want one naming --pod-ip-first", err)
	}
}

func TestPodNetworkFlag(t *testing.T) {
	base := []string{"--node-name=n", "--root-dir=/tmp/x", "--kubeconfig=/k"}
	if c, err := parseFlags(base); err != nil || c.podNetwork != "host" {
		t.Fatalf("default: %v, %+v", err, c)
	}
	if c, err := parseFlags(append(base, "--pod-network=netns")); err != nil || c.podNetwork != "netns" {
		t.Fatalf("netns: %v, %+v", err, c)
	}
	if _, err := parseFlags(append(base, "--pod-network=cni")); err == nil || !strings.Contains(err.Error(), "--pod-network") {
		t.Errorf("cni: err = %v, want one naming --pod-network", err)
	}
}
