package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func dockerConfigSecret(name, cfg string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(cfg)}}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestSplitImage(t *testing.T) {
	for in, want := range map[string][2]string{
		"127.0.0.1:5000/ml/tj-runtime:0.1.0":  {"127.0.0.1:5000", "ml/tj-runtime"},
		"docker.io/library/busybox:latest":    {"docker.io", "library/busybox"},
		"registry.example.com/ml/x@sha256:ab": {"registry.example.com", "ml/x"},
	} {
		if h, r := splitImage(in); h != want[0] || r != want[1] {
			t.Errorf("splitImage(%q) = %q, %q; want %q", in, h, r, want)
		}
	}
}

func TestKeyMatchesLikeTheKubelet(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want bool
	}{
		{"127.0.0.1:5000", true},
		{"https://127.0.0.1:5000", true},
		{"127.0.0.1:5000/ml", true},
		{"127.0.0.1:5000/ml/tj-runtime", true},
		{"127.0.0.1:5000/m", false},     // a path prefix is whole components
		{"127.0.0.1:5000/other", false}, // another repository path
		{"127.0.0.1", false},            // the port must match
		{"127.0.0.1:5001", false},
		{"127.0.0.*:5000", true}, // a glob within one label
		{"*:5000", false},        // ... never across labels
	} {
		if got := keyMatches(tc.key, "127.0.0.1:5000", "ml/tj-runtime"); got != tc.want {
			t.Errorf("keyMatches(%q) = %v, want %v", tc.key, got, tc.want)
		}
	}
	if !keyMatches("https://index.docker.io/v1/", "docker.io", "library/busybox") {
		t.Errorf("docker's own key does not match docker.io")
	}
}

func TestCredentialsForMostSpecificFirst(t *testing.T) {
	secrets := []*corev1.Secret{
		dockerConfigSecret("regcred", `{"auths": {"127.0.0.1:5000": {"auth": "`+b64("a:1")+`"},
			"127.0.0.1:5000/ml": {"username": "b", "password": "2"}, "other.example.com": {"auth": "x"}}}`),
		dockerConfigSecret("broken", `{"auths": `),
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "opaque"}, Type: corev1.SecretTypeOpaque},
	}
	creds, errs := credentialsFor("127.0.0.1:5000/ml/tj-runtime:0.1.0", secrets)
	if len(creds) != 2 || creds[0].key != "127.0.0.1:5000/ml" || creds[0].auth != b64("b:2") || creds[1].auth != b64("a:1") ||
		creds[0].secret != "ml/regcred" {
		t.Errorf("credentials %+v", creds)
	}
	if len(errs) != 2 || !strings.Contains(errs[0].Error(), "ml/broken") || !strings.Contains(errs[1].Error(), `ml/opaque: type "Opaque"`) {
		t.Errorf("errors %v: want the broken and the opaque Secret named", errs)
	}
}

// fakePuller records the credentials each pull was given and accepts only `accept`.
func fakePuller(t *testing.T, accept string, secrets ...*corev1.Secret) (*imagePuller, *[]string) {
	var seen []string
	cs := fake.NewSimpleClientset()
	for _, s := range secrets {
		if _, err := cs.CoreV1().Secrets(s.Namespace).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	p := &imagePuller{registries: map[string]bool{"127.0.0.1:5000": true}, tmpDir: t.TempDir(), cs: cs, pulled: map[string]bool{}}
	p.pull = func(ref, authFile string) error {
		data, err := os.ReadFile(authFile)
		if err != nil {
			return err
		}
		var f struct {
			Auths map[string]dockerAuthEntry `json:"auths"`
		}
		if err := json.Unmarshal(data, &f); err != nil {
			return err
		}
		auth := f.Auths["127.0.0.1:5000"].Auth
		seen = append(seen, ref+" "+auth)
		if auth != accept {
			return errors.New("reading manifest 0.1.0 in 127.0.0.1:5000/ml/tj-runtime: unauthorized: authentication required")
		}
		return nil
	}
	return p, &seen
}

func pullPod(secrets ...string) (*corev1.Pod, *corev1.Container) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "digits-worker-0"}}
	for _, s := range secrets {
		pod.Spec.ImagePullSecrets = append(pod.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: s})
	}
	return pod, &corev1.Container{Name: "trainer", Image: "127.0.0.1:5000/ml/tj-runtime:0.1.0", ImagePullPolicy: corev1.PullIfNotPresent}
}

func TestPullTriesEachCredentialThenRemembersTheImage(t *testing.T) {
	good := b64("tj:right")
	p, seen := fakePuller(t, good,
		dockerConfigSecret("old", `{"auths": {"127.0.0.1:5000/ml": {"auth": "`+b64("tj:wrong")+`"}}}`),
		dockerConfigSecret("regcred", `{"auths": {"127.0.0.1:5000": {"auth": "`+good+`"}}}`))
	pod, c := pullPod("old", "regcred")
	if err := p.ensure(context.Background(), pod, c); err != nil {
		t.Fatalf("ensure: %v", err)
	}
	if len(*seen) != 2 || !strings.HasSuffix((*seen)[1], good) {
		t.Errorf("pulls %q: want the wrong credential, then the right one", *seen)
	}
	if err := p.ensure(context.Background(), pod, c); err != nil || len(*seen) != 2 {
		t.Errorf("IfNotPresent after a pull: err %v, %d pulls (want no new pull)", err, len(*seen))
	}
	c.ImagePullPolicy = corev1.PullAlways
	if err := p.ensure(context.Background(), pod, c); err != nil || len(*seen) != 4 {
		t.Errorf("Always: err %v, %d pulls (want both credentials tried again)", err, len(*seen))
	}
}

func TestRefusedCredentialsAreErrImagePullNamingImageAndSecret(t *testing.T) {
	p, seen := fakePuller(t, b64("tj:right"), dockerConfigSecret("regcred", `{"auths": {"127.0.0.1:5000": {"auth": "`+b64("tj:wrong")+`"}}}`))
	pod, c := pullPod("regcred", "missing")
	err := p.ensure(context.Background(), pod, c)
	var ipe *imagePullError
	if !errors.As(err, &ipe) {
		t.Fatalf("ensure: %v, want an *imagePullError", err)
	}
	for _, want := range []string{`image "127.0.0.1:5000/ml/tj-runtime:0.1.0"`, "Secret ml/regcred", "unauthorized", "pull secret ml/missing"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
	if len(*seen) != 1 || p.pulled[normalizeImage(c.Image)] {
		t.Errorf("pulls %q, pulled %v", *seen, p.pulled)
	}
}

func TestPullOnlyFromPullRegistries(t *testing.T) {
	p, seen := fakePuller(t, "")
	pod, c := pullPod()
	c.Image = "ghcr.io/trainingjob-dev/tj-runtime:0.1.0" // the local storage's, as before
	if err := p.ensure(context.Background(), pod, c); err != nil || len(*seen) != 0 {
		t.Errorf("another registry: err %v, pulls %q", err, *seen)
	}
	c.Image, c.ImagePullPolicy = "127.0.0.1:5000/ml/tj-runtime:0.1.0", corev1.PullNever
	if err := p.ensure(context.Background(), pod, c); err != nil || len(*seen) != 0 {
		t.Errorf("Never: err %v, pulls %q", err, *seen)
	}
	c.ImagePullPolicy = corev1.PullIfNotPresent // no secret: one anonymous pull, the auth file empty
	if err := p.ensure(context.Background(), pod, c); err != nil || len(*seen) != 1 || (*seen)[0] != "127.0.0.1:5000/ml/tj-runtime:0.1.0 " {
		t.Errorf("anonymous: err %v, pulls %q", err, *seen)
	}
	var nilPuller *imagePuller
	if err := nilPuller.ensure(context.Background(), pod, c); err != nil {
		t.Errorf("no --pull-registry: %v", err)
	}
}

func TestPullFailureIsBuildahsErrorLine(t *testing.T) {
	out := "Trying to pull ...\nError: initializing source docker://x: unauthorized: authentication required\n"
	if got := pullFailure(out, errors.New("exit status 125")).Error(); got != "initializing source docker://x: unauthorized: authentication required" {
		t.Errorf("pullFailure = %q", got)
	}
}
