package main

import (
	"errors"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestMain lets the test binary be the mount namespace wrapper, as the agent's binary is.
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == mountExecArg {
		mountExecMain(os.Args[2])
	}
	os.Exit(m.Run())
}

// imageUnderTest is the runtime image scripts/build-images.sh built; ctest's
// tj_node_agent_image_test sets it (label images, after the images are built). Without it the
// image tests do not run here: `go test` alone has no images.
func imageUnderTest(t *testing.T) (*buildahStore, string) {
	image := os.Getenv("TJ_IMAGE_TEST_RUNTIME")
	if image == "" {
		t.Skip("TJ_IMAGE_TEST_RUNTIME not set (ctest's tj_node_agent_image_test sets it)")
	}
	store, err := newBuildahStore()
	if err != nil {
		t.Fatal(err)
	}
	return store, image
}

// runInImage runs argv in the image as the wrapper would for a pod: own mount namespace, chroot,
// the image's user and working directory, a volume bound at /data.
func runInImage(t *testing.T, store *buildahStore, image string, argv []string) (string, error) {
	t.Helper()
	cfg, err := store.config(image)
	if err != nil {
		t.Fatal(err)
	}
	root, release, err := store.rootfs(image, "tj-agent-image-test-"+strings.ReplaceAll(t.Name(), "/", "-"))
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	uid, gid, _, err := containerUser(pod, &corev1.Container{Name: "c"}, cfg, root)
	if err != nil {
		t.Fatal(err)
	}
	exe, err := findInRoot(root, argv[0], envPATH(cfg.Env))
	if err != nil {
		return "", err
	}
	self, _ := os.Executable()
	volume := t.TempDir()
	if err := os.WriteFile(volume+"/marker", []byte("from the host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, wargv, err := wrapForMountNamespace(self, mountExecSpec{Exe: exe, Argv: argv, Dir: cfg.WorkingDir, Root: root, UID: uid, GID: gid,
		Binds: []bindMount{{Source: volume, Target: "/data", ReadOnly: true}, {Source: volume, Target: "/var/run/secrets/x", ReadOnly: true}}})
	if err != nil {
		t.Fatal(err)
	}
	cmd := &exec.Cmd{Path: self, Args: wargv, Env: cfg.Env, SysProcAttr: &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestContainerRunsInsideItsImage(t *testing.T) {
	store, image := imageUnderTest(t)
	out, err := runInImage(t, store, image, []string{"sh", "-c", "id -u; id -g; pwd; cat /data/marker; cat /var/run/secrets/x/marker; test -x /usr/local/bin/tj-train && echo has-tj-train"})
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if want := "65532\n65532\n/tmp\nfrom the host\nfrom the host\nhas-tj-train\n"; out != want {
		t.Errorf("inside %s: %q, want %q (the image's user, its WORKDIR, the volume, its files)", image, out, want)
	}
	out, err = runInImage(t, store, image, []string{"tj-train", "--help"})
	if err != nil {
		t.Errorf("tj-train --help in %s: %v: %s", image, err, out)
	}
}

func TestImageWithoutTheCommandIsCreateContainerError(t *testing.T) {
	store, image := imageUnderTest(t)
	_, err := runInImage(t, store, image, []string{"tj-no-such-command"})
	var cce *createContainerError
	if !errors.As(err, &cce) || !strings.Contains(err.Error(), "executable file not found") {
		t.Errorf("a command the image lacks: %v, want CreateContainerError", err)
	}
}

func TestMissingImageIsErrImagePull(t *testing.T) {
	store, _ := imageUnderTest(t)
	_, err := store.config("trainingjob/tj-no-such-image:0.0.0")
	var ipe *imagePullError
	if !errors.As(err, &ipe) || !strings.Contains(err.Error(), "docker.io/trainingjob/tj-no-such-image:0.0.0") {
		t.Errorf("a missing image: %v, want ErrImagePull naming it", err)
	}
}

func TestPodGroupsAreFSGroupThenSupplementalGroups(t *testing.T) {
	fs := int64(65532)
	pod := &corev1.Pod{Spec: corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{FSGroup: &fs, SupplementalGroups: []int64{7, 8}}}}
	if got := podGroups(pod); !reflect.DeepEqual(got, []int{65532, 7, 8}) {
		t.Errorf("podGroups = %v, want [65532 7 8]", got)
	}
	if got := podGroups(&corev1.Pod{}); got != nil {
		t.Errorf("podGroups without a security context = %v, want none", got)
	}
}
