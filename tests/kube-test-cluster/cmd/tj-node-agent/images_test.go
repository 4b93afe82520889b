package main

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNormalizeImageLikeTheRuntime(t *testing.T) {
	for in, want := range map[string]string{
		"busybox":                      "docker.io/library/busybox:latest",
		"trainingjob/tj-runtime:0.1.0": "docker.io/trainingjob/tj-runtime:0.1.0",
		"ghcr.io/trainingjob-dev/tj-operator:0.1.0": "ghcr.io/trainingjob-dev/tj-operator:0.1.0",
		"localhost:5000/x":                          "localhost:5000/x:latest",
		"localhost/x:1":                             "localhost/x:1",
		"debian@sha256:abc":                         "docker.io/library/debian@sha256:abc",
	} {
		if got := normalizeImage(in); got != want {
			t.Errorf("normalizeImage(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestContainerCommandKubeletRules(t *testing.T) {
	img := imageConfig{Entrypoint: []string{"/usr/local/bin/tj-train"}, Cmd: []string{"--default"}}
	for _, tc := range []struct {
		name          string
		command, args []string
		want          []string
	}{
		{"image entrypoint and cmd", nil, nil, []string{"/usr/local/bin/tj-train", "--default"}},
		{"args replace cmd", nil, []string{"--x"}, []string{"/usr/local/bin/tj-train", "--x"}},
		{"command replaces both", []string{"tjctl"}, nil, []string{"tjctl"}},
		{"command and args", []string{"tjctl"}, []string{"validate"}, []string{"tjctl", "validate"}},
	} {
		c := &corev1.Container{Command: tc.command, Args: tc.args}
		if got := containerCommand(c, img); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// fakeRoot is an image root file system: /usr/local/bin/tj-train (executable), /usr/bin/notes
// (not executable), the usr-merge link /bin -> usr/bin and an /etc/passwd with nonroot.
func fakeRoot(t *testing.T) string {
	root := t.TempDir()
	for _, d := range []string{"usr/local/bin", "usr/bin", "etc"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, data string, mode os.FileMode) {
		if err := os.WriteFile(filepath.Join(root, p), []byte(data), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("usr/local/bin/tj-train", "#!/bin/sh\n", 0o755)
	write("usr/bin/sh", "", 0o755)
	write("usr/bin/notes", "", 0o644)
	write("etc/passwd", "root:x:0:0:root:/root:/bin/bash\nnonroot:x:65532:65532::/nonexistent:/usr/sbin/nologin\n", 0o644)
	if err := os.Symlink("usr/bin", filepath.Join(root, "bin")); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestFindInRootSearchesTheImagesPath(t *testing.T) {
	root := fakeRoot(t)
	path := "/usr/local/bin:/usr/bin"
	for argv0, want := range map[string]string{"tj-train": "/usr/local/bin/tj-train", "/bin/sh": "/bin/sh", "sh": "/usr/bin/sh"} {
		if got, err := findInRoot(root, argv0, path); err != nil || got != want {
			t.Errorf("findInRoot(%q) = %q, %v; want %q", argv0, got, err, want)
		}
	}
	for _, argv0 := range []string{"tj-operator", "notes", "/usr/local/bin/missing"} {
		_, err := findInRoot(root, argv0, path)
		var cce *createContainerError
		if !errors.As(err, &cce) {
			t.Errorf("findInRoot(%q): %v, want a CreateContainerError", argv0, err)
		}
	}
	if _, err := findInRoot(root, "tj-train", "/usr/bin"); err == nil {
		t.Errorf("tj-train found outside the container's PATH")
	}
	if _, err := findInRoot(root, "../../../../bin/sh", path); err == nil && !fileExists(filepath.Join(root, "bin/sh")) {
		t.Errorf("a relative path escaped the root")
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

func TestContainerUser(t *testing.T) {
	root := fakeRoot(t)
	i64 := func(v int64) *int64 { return &v }
	yes := true
	pod := func(sc *corev1.PodSecurityContext) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{SecurityContext: sc}}
	}
	c := &corev1.Container{Name: "c"}

	uid, gid, home, err := containerUser(pod(nil), c, imageConfig{User: "65532:65532"}, root)
	if err != nil || uid != 65532 || gid != 65532 || home != "/nonexistent" {
		t.Errorf("image USER 65532:65532 -> %d:%d home %q, %v", uid, gid, home, err)
	}
	if uid, gid, _, err = containerUser(pod(nil), c, imageConfig{User: "nonroot"}, root); err != nil || uid != 65532 || gid != 65532 {
		t.Errorf("image USER nonroot -> %d:%d, %v", uid, gid, err)
	}
	if uid, gid, _, err = containerUser(pod(&corev1.PodSecurityContext{RunAsUser: i64(1000), RunAsGroup: i64(2000)}), c,
		imageConfig{User: "65532:65532"}, root); err != nil || uid != 1000 || gid != 2000 {
		t.Errorf("runAsUser/runAsGroup over the image -> %d:%d, %v", uid, gid, err)
	}
	_, _, _, err = containerUser(pod(&corev1.PodSecurityContext{RunAsNonRoot: &yes}), c, imageConfig{}, root)
	var ce *configError
	if !errors.As(err, &ce) {
		t.Errorf("runAsNonRoot with a root image: %v, want CreateContainerConfigError", err)
	}
	if _, _, _, err = containerUser(pod(&corev1.PodSecurityContext{RunAsNonRoot: &yes}), c, imageConfig{User: "65532"}, root); err != nil {
		t.Errorf("runAsNonRoot with USER 65532: %v", err)
	}
	if _, _, _, err = containerUser(pod(nil), c, imageConfig{User: "nobody-here"}, root); !errors.As(err, &ce) {
		t.Errorf("image user missing from /etc/passwd: %v, want a config error", err)
	}
}

func TestTokenFileModeLikeKubelet(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	mode420 := int32(0o644)
	pod := func(sc *corev1.PodSecurityContext) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{SecurityContext: sc}}
	}
	for _, tc := range []struct {
		name     string
		pod      *corev1.Pod
		mode     os.FileMode
		uid, gid int
	}{
		{"no security context: defaultMode", pod(nil), 0o644, -1, -1},
		{"fsGroup: group-readable", pod(&corev1.PodSecurityContext{FSGroup: i64(2000), RunAsUser: i64(1000)}), 0o640, -1, 2000},
		{"runAsUser without fsGroup: its own", pod(&corev1.PodSecurityContext{RunAsUser: i64(65532)}), 0o600, 65532, -1},
	} {
		mode, uid, gid := tokenOwner(tc.pod, &mode420)
		if mode != tc.mode || uid != tc.uid || gid != tc.gid {
			t.Errorf("%s: %o %d:%d, want %o %d:%d", tc.name, mode, uid, gid, tc.mode, tc.uid, tc.gid)
		}
	}
}

func TestInRootFollowsLinksInsideTheRoot(t *testing.T) {
	root := fakeRoot(t)
	if err := os.MkdirAll(filepath.Join(root, "run"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/run", filepath.Join(root, "var-run")); err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		"/var-run/secrets/sa": "/run/secrets/sa", // absolute link: inside the root, not the host's /run
		"/bin/sh":             "/usr/bin/sh",     // relative link
		"/../../etc/passwd":   "/etc/passwd",     // ".." stops at the root
		"/new/dir":            "/new/dir",
	} {
		if got := inRoot(root, in); got != filepath.Join(root, want) {
			t.Errorf("inRoot(%q) = %q, want %q", in, got, filepath.Join(root, want))
		}
	}
}
