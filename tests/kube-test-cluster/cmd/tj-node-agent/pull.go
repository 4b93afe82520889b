package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// With --pull-registry the agent pulls the images of those registries as a kubelet's runtime
// does, instead of finding them in buildah's local storage: `buildah pull` over TLS (the CA of
// --pull-cert-dir), with each matching credential of the pod's imagePullSecrets in turn (the
// ServiceAccount admission plugin has copied the ServiceAccount's into the pod), anonymously when
// none matches. The pulled image lands in buildah's storage, where imageStore then finds it.
// Images of other registries (and images with no registry host) are read from the local storage
// as before: nothing is pulled for them.
//
// Pull policy as the kubelet applies it: Always pulls at every container start; IfNotPresent
// pulls unless this agent pulled the image since it started (a node starts with none, so an image
// the machine's storage already holds is still pulled once, and its credentials checked); Never
// pulls nothing. Pulls are serialized, as the kubelet's serializeImagePulls (its default) does.

// pullFunc pulls ref with the containers-auth.json at authFile; buildah in the agent, a stand-in
// in unit tests.
type pullFunc func(ref, authFile string) error

type imagePuller struct {
	registries map[string]bool // host[:port] of --pull-registry
	tmpDir     string          // the auth files live here while a pull runs
	cs         kubernetes.Interface
	pull       pullFunc

	mu     sync.Mutex      // held for a whole pull: one pull at a time
	pulled map[string]bool // normalized references pulled since start; guarded by mu
}

func newImagePuller(cfg *config, cs kubernetes.Interface) (*imagePuller, error) {
	b, err := exec.LookPath("buildah")
	if err != nil {
		return nil, fmt.Errorf("--pull-registry: %v", err)
	}
	tmp := cfg.rootDir + "/pull-auth"
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return nil, fmt.Errorf("--pull-registry: %v", err)
	}
	p := &imagePuller{registries: map[string]bool{}, tmpDir: tmp, cs: cs, pulled: map[string]bool{}}
	for _, r := range cfg.pullRegistries {
		p.registries[r] = true
	}
	p.pull = func(ref, authFile string) error {
		args := []string{"pull", "--quiet", "--policy", "always", "--tls-verify=true", "--authfile", authFile}
		if cfg.pullCertDir != "" {
			args = append(args, "--cert-dir", cfg.pullCertDir)
		}
		out, err := exec.Command(b, append(args, "docker://"+ref)...).CombinedOutput()
		if err != nil {
			return pullFailure(string(out), err)
		}
		return nil
	}
	return p, nil
}

// ensure pulls c's image when it is on a --pull-registry and the pull policy asks for it. A pull
// every credential fails is an *imagePullError naming the image and, per attempt, the Secret
// and the registry's answer.
func (p *imagePuller) ensure(ctx context.Context, pod *corev1.Pod, c *corev1.Container) error {
	if p == nil {
		return nil
	}
	ref := normalizeImage(c.Image)
	host, _ := splitImage(ref)
	if !p.registries[host] || c.ImagePullPolicy == corev1.PullNever {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if c.ImagePullPolicy != corev1.PullAlways && p.pulled[ref] {
		return nil
	}
	secrets, problems := p.pullSecrets(ctx, pod)
	creds, errs := credentialsFor(ref, secrets)
	for _, e := range errs {
		problems = append(problems, e.Error())
	}
	attempts := []*registryCredential{nil} // anonymous when no credential matches
	if len(creds) > 0 {
		attempts = attempts[:0]
		for i := range creds {
			attempts = append(attempts, &creds[i])
		}
	}
	var failures []string
	for _, cred := range attempts {
		err := p.pullWith(ref, host, cred)
		who := "anonymously"
		if cred != nil {
			who = fmt.Sprintf("with %q of Secret %s", cred.key, cred.secret)
		}
		if err == nil {
			klog.Infof("pod %s/%s: pulled %s %s", pod.Namespace, pod.Name, ref, who)
			p.pulled[ref] = true
			return nil
		}
		failures = append(failures, who+": "+err.Error())
	}
	msg := fmt.Sprintf("failed to pull and unpack image %q: %s", c.Image, strings.Join(failures, "; "))
	if len(problems) > 0 {
		msg += " (" + strings.Join(problems, "; ") + ")"
	}
	return &imagePullError{msg}
}

// pullSecrets reads the pod's imagePullSecrets; one that cannot be read is a problem to report,
// not an error: the kubelet pulls with the others (or anonymously).
func (p *imagePuller) pullSecrets(ctx context.Context, pod *corev1.Pod) ([]*corev1.Secret, []string) {
	var out []*corev1.Secret
	var problems []string
	for _, ref := range pod.Spec.ImagePullSecrets {
		s, err := p.cs.CoreV1().Secrets(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			problems = append(problems, fmt.Sprintf("pull secret %s/%s: %v", pod.Namespace, ref.Name, err))
			continue
		}
		out = append(out, s)
	}
	return out, problems
}

// pullWith writes cred (or none) to a private auth file for the one pull: the pull never reads
// the machine's own credentials.
func (p *imagePuller) pullWith(ref, host string, cred *registryCredential) error {
	f, err := os.CreateTemp(p.tmpDir, "auth-*.json") // mode 0600
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(authFileFor(host, cred))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return p.pull(ref, f.Name())
}

// pullFailure is what buildah said went wrong: its last "Error:" line (earlier lines are retries
// and warnings), else the exit status.
func pullFailure(out string, err error) error {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if msg, ok := strings.CutPrefix(strings.TrimSpace(lines[i]), "Error: "); ok {
			return fmt.Errorf("%s", msg)
		}
	}
	return fmt.Errorf("buildah pull: %v: %s", err, strings.TrimSpace(out))
}
