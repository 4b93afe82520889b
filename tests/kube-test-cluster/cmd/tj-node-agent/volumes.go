package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// A process cannot get its own mount namespace here without privileges the tests should not rely
// on, so each volume is a host directory and every volumeMount is a (container path -> host path)
// pair. The pair list is exported to the process (TJ_NODE_AGENT_MOUNTS) and, unless
// --rewrite-mount-paths=false, the container paths in command, args, env values and workingDir are
// replaced by the host paths.

const serviceAccountMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"

type mount struct {
	containerPath string
	hostPath      string
	readOnly      bool
}

// tokenFile is a projected service-account token the agent keeps fresh (the kubelet rotates at 80%
// of its lifetime).
type tokenFile struct {
	path       string
	mode       os.FileMode // the projected volume's defaultMode (0644 unless set), as the kubelet
	uid, gid   int         // owner, -1: unchanged (tokenOwner)
	sa         string
	audience   string
	expiration int64
	expires    time.Time
	issued     time.Time
}

type podVolumes struct {
	hostDirs map[string]string // volume name -> host directory
	tokens   []*tokenFile
}

func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// safeJoin joins a relative item path under dir, refusing escapes ("../").
func safeJoin(dir, rel string) (string, error) {
	p := filepath.Join(dir, rel)
	if rel == "" || filepath.IsAbs(rel) || !strings.HasPrefix(p, dir+string(filepath.Separator)) {
		return "", configErrorf("path %q escapes its volume", rel)
	}
	return p, nil
}

func writeKeys(dir string, data map[string]string, items []corev1.KeyToPath, what string, optional bool) error {
	if items == nil {
		for k, v := range data {
			p, err := safeJoin(dir, k)
			if err != nil {
				return err
			}
			if err := writeFileAtomic(p, []byte(v), 0o644); err != nil {
				return err
			}
		}
		return nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return configErrorf("%s has no key %q", what, it.Key)
		}
		p, err := safeJoin(dir, it.Path)
		if err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if it.Mode != nil {
			mode = os.FileMode(*it.Mode)
		}
		if err := writeFileAtomic(p, []byte(v), mode); err != nil {
			return err
		}
	}
	return nil
}

func isTrue(b *bool) bool { return b != nil && *b }

// prepareVolumes creates the pod's volume directories under podDir/volumes and fills secret,
// configMap, downwardAPI and projected volumes (service-account tokens through the TokenRequest API).
func prepareVolumes(ctx context.Context, cs kubernetes.Interface, src objectSource, pod *corev1.Pod, podDir string,
	podIP, hostIP string, defaultExpiration time.Duration) (*podVolumes, error) {
	pv := &podVolumes{hostDirs: map[string]string{}}
	for _, v := range pod.Spec.Volumes {
		dir := filepath.Join(podDir, "volumes", v.Name)
		switch {
		case v.HostPath != nil:
			dir = v.HostPath.Path
			if v.HostPath.Type != nil && (*v.HostPath.Type == corev1.HostPathDirectoryOrCreate) {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					return nil, fmt.Errorf("volume %s: hostPath %s: %v", v.Name, dir, err)
				}
			} else if _, err := os.Stat(dir); err != nil && v.HostPath.Type != nil && *v.HostPath.Type != corev1.HostPathUnset {
				return nil, configErrorf("volume %s: hostPath %s: %v", v.Name, dir, err)
			}
		case v.EmptyDir != nil:
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, err
			}
		case v.PersistentVolumeClaim != nil:
			path, err := claimHostPath(ctx, cs, pod.Namespace, v.PersistentVolumeClaim.ClaimName)
			if err != nil {
				return nil, fmt.Errorf("volume %s: %w", v.Name, err)
			}
			dir = path
			applyFSGroup(dir, pod)
		case v.Secret != nil:
			data, _, err := src.secret(ctx, pod.Namespace, v.Secret.SecretName, v.Secret.Optional)
			if err != nil {
				return nil, fmt.Errorf("volume %s: %w", v.Name, err)
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, err
			}
			if err := writeKeys(dir, data, v.Secret.Items, "secret "+v.Secret.SecretName, isTrue(v.Secret.Optional)); err != nil {
				return nil, fmt.Errorf("volume %s: %w", v.Name, err)
			}
		case v.ConfigMap != nil:
			data, _, err := src.configMap(ctx, pod.Namespace, v.ConfigMap.Name, v.ConfigMap.Optional)
			if err != nil {
				return nil, fmt.Errorf("volume %s: %w", v.Name, err)
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, err
			}
			if err := writeKeys(dir, data, v.ConfigMap.Items, "configmap "+v.ConfigMap.Name, isTrue(v.ConfigMap.Optional)); err != nil {
				return nil, fmt.Errorf("volume %s: %w", v.Name, err)
			}
		case v.DownwardAPI != nil:
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, err
			}
			if err := writeDownward(dir, pod, podIP, hostIP, v.DownwardAPI.Items); err != nil {
				return nil, fmt.Errorf("volume %s: %w", v.Name, err)
			}
		case v.Projected != nil:
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, err
			}
			for _, s := range v.Projected.Sources {
				var err error
				switch {
				case s.ServiceAccountToken != nil:
					t := s.ServiceAccountToken
					p, jerr := safeJoin(dir, t.Path)
					if jerr != nil {
						return nil, fmt.Errorf("volume %s: %w", v.Name, jerr)
					}
					exp := int64(defaultExpiration / time.Second)
					if t.ExpirationSeconds != nil {
						exp = *t.ExpirationSeconds
					}
					tf := &tokenFile{path: p, sa: pod.Spec.ServiceAccountName, audience: t.Audience, expiration: exp}
					tf.mode, tf.uid, tf.gid = tokenOwner(pod, v.Projected.DefaultMode)
					if tf.sa == "" {
						tf.sa = "default"
					}
					if err = refreshToken(ctx, cs, pod, tf); err == nil {
						pv.tokens = append(pv.tokens, tf)
					}
				case s.ConfigMap != nil:
					var data map[string]string
					if data, _, err = src.configMap(ctx, pod.Namespace, s.ConfigMap.Name, s.ConfigMap.Optional); err == nil {
						err = writeKeys(dir, data, s.ConfigMap.Items, "configmap "+s.ConfigMap.Name, isTrue(s.ConfigMap.Optional))
					}
				case s.Secret != nil:
					var data map[string]string
					if data, _, err = src.secret(ctx, pod.Namespace, s.Secret.Name, s.Secret.Optional); err == nil {
						err = writeKeys(dir, data, s.Secret.Items, "secret "+s.Secret.Name, isTrue(s.Secret.Optional))
					}
				case s.DownwardAPI != nil:
					err = writeDownward(dir, pod, podIP, hostIP, s.DownwardAPI.Items)
				default:
					err = configErrorf("projected source not supported by tj-node-agent")
				}
				if err != nil {
					return nil, fmt.Errorf("volume %s: %w", v.Name, err)
				}
			}
		default:
			return nil, configErrorf("volume %s: only emptyDir, hostPath, persistentVolumeClaim (of hostPath or local volumes), secret, configMap, downwardAPI and projected volumes are supported by tj-node-agent", v.Name)
		}
		pv.hostDirs[v.Name] = dir
	}
	return pv, nil
}

func writeDownward(dir string, pod *corev1.Pod, podIP, hostIP string, items []corev1.DownwardAPIVolumeFile) error {
	for _, it := range items {
		if it.FieldRef == nil {
			return configErrorf("downwardAPI %s: only fieldRef items are supported", it.Path)
		}
		v, err := fieldRefValue(pod, podIP, hostIP, it.FieldRef.FieldPath)
		if err != nil {
			return err
		}
		p, err := safeJoin(dir, it.Path)
		if err != nil {
			return err
		}
		if err := writeFileAtomic(p, []byte(v), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// tokenOwner: the kubelet writes a projected token with the volume's defaultMode (0644, what
// admission sets for kube-api-access-*), group fsGroup and 0640 with an fsGroup, and 0600 owned
// by the pod's runAsUser when it has one and no fsGroup (a process of another user of the image
// could not read it otherwise).
func tokenOwner(pod *corev1.Pod, defaultMode *int32) (mode os.FileMode, uid, gid int) {
	mode, uid, gid = 0o644, -1, -1
	if defaultMode != nil {
		mode = os.FileMode(*defaultMode)
	}
	sc := pod.Spec.SecurityContext
	switch {
	case sc != nil && sc.FSGroup != nil:
		return 0o640, -1, int(*sc.FSGroup)
	case sc != nil && sc.RunAsUser != nil:
		return 0o600, int(*sc.RunAsUser), -1
	}
	return mode, uid, gid
}

// refreshToken asks the API server for a token bound to the pod (it dies with the pod) and writes it.
func refreshToken(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod, tf *tokenFile) error {
	req := &authv1.TokenRequest{Spec: authv1.TokenRequestSpec{
		ExpirationSeconds: &tf.expiration,
		BoundObjectRef:    &authv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}
	if tf.audience != "" {
		req.Spec.Audiences = []string{tf.audience}
	}
	resp, err := cs.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, tf.sa, req, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("TokenRequest for serviceaccount %s/%s: %v", pod.Namespace, tf.sa, err)
	}
	if err := writeFileAtomic(tf.path, []byte(resp.Status.Token), tf.mode); err != nil {
		return err
	}
	if tf.uid != -1 || tf.gid != -1 {
		if err := os.Chown(tf.path, tf.uid, tf.gid); err != nil {
			return fmt.Errorf("token %s: %v", tf.path, err)
		}
	}
	tf.issued = time.Now()
	tf.expires = resp.Status.ExpirationTimestamp.Time
	return nil
}

// dueAt is when the kubelet would rotate: at 80% of the token's lifetime.
func (tf *tokenFile) dueAt() time.Time {
	return tf.issued.Add(tf.expires.Sub(tf.issued) * 8 / 10)
}

// containerMounts maps the container's volumeMounts to host paths.
func containerMounts(c *corev1.Container, pv *podVolumes) ([]mount, error) {
	var out []mount
	for _, vm := range c.VolumeMounts {
		dir, ok := pv.hostDirs[vm.Name]
		if !ok {
			return nil, configErrorf("volumeMount %s: no volume %q in the pod", vm.MountPath, vm.Name)
		}
		hp := dir
		if vm.SubPath != "" {
			var err error
			if hp, err = safeJoin(dir, vm.SubPath); err != nil {
				return nil, err
			}
			if err := os.MkdirAll(hp, 0o755); err != nil {
				return nil, err
			}
		}
		out = append(out, mount{containerPath: filepath.Clean(vm.MountPath), hostPath: hp, readOnly: vm.ReadOnly})
	}
	return out, nil
}

// Characters that may precede / follow a path inside a flag value, an env value or a shell script.
const (
	pathBefore = "=:, \t\n;'\"("
	pathAfter  = "/:, \t\n;'\")"
)

// rewritePaths replaces a mount's container path by its host path where it is a whole path
// component sequence inside s: at the start of s or after one of pathBefore, and followed by the end
// of s or one of pathAfter ("--dir=/ckpt/x", "cat /data/f; ..."). The longest container path wins,
// so nested mounts work.
func rewritePaths(s string, mounts []mount) string {
	if len(mounts) == 0 || !strings.Contains(s, "/") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		atStart := i == 0 || strings.IndexByte(pathBefore, s[i-1]) >= 0
		best := -1
		if atStart && s[i] == '/' {
			for k, m := range mounts {
				cp := m.containerPath
				if strings.HasPrefix(s[i:], cp) && (i+len(cp) == len(s) || strings.IndexByte(pathAfter, s[i+len(cp)]) >= 0) {
					if best < 0 || len(cp) > len(mounts[best].containerPath) {
						best = k
					}
				}
			}
		}
		if best >= 0 {
			b.WriteString(mounts[best].hostPath)
			i += len(mounts[best].containerPath)
			continue
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

func mountsEnv(mounts []mount) string {
	parts := make([]string, 0, len(mounts))
	for _, m := range mounts {
		parts = append(parts, m.containerPath+"="+m.hostPath)
	}
	return strings.Join(parts, ":")
}

// claimHostPath resolves a pod's claim as the kubelet does before it mounts it: the claim must be
// Bound, and its PersistentVolume's directory (hostPath or local, the kinds a single machine can
// serve) is what the containers see. An unbound claim is waited for (the caller retries).
func claimHostPath(ctx context.Context, cs kubernetes.Interface, namespace, name string) (string, error) {
	claim, err := cs.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("persistentvolumeclaim %s/%s: %v", namespace, name, err)
	}
	if claim.Status.Phase != corev1.ClaimBound || claim.Spec.VolumeName == "" {
		return "", fmt.Errorf("persistentvolumeclaim %s/%s is %s, not Bound yet", namespace, name, claim.Status.Phase)
	}
	pv, err := cs.CoreV1().PersistentVolumes().Get(ctx, claim.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("persistentvolume %s of claim %s/%s: %v", claim.Spec.VolumeName, namespace, name, err)
	}
	var path string
	switch {
	case pv.Spec.HostPath != nil:
		path = pv.Spec.HostPath.Path
	case pv.Spec.Local != nil:
		path = pv.Spec.Local.Path
	default:
		return "", configErrorf("persistentvolume %s: only hostPath and local volumes can be mounted by tj-node-agent", pv.Name)
	}
	if err := os.MkdirAll(path, 0o755); err != nil {
		return "", fmt.Errorf("persistentvolume %s: %v", pv.Name, err)
	}
	return path, nil
}

// applyFSGroup gives the volume's root to the pod's fsGroup, group-writable and setgid, as the
// kubelet does (fsGroupChangePolicy OnRootMismatch: the root only, when it differs). Without the
// privilege to chown (a non-root agent) the directory is left as it is, and the log says so.
func applyFSGroup(dir string, pod *corev1.Pod) {
	sc := pod.Spec.SecurityContext
	if sc == nil || sc.FSGroup == nil {
		return
	}
	if err := os.Chown(dir, -1, int(*sc.FSGroup)); err != nil {
		klog.Warningf("pod %s/%s: fsGroup %d on %s: %v", pod.Namespace, pod.Name, *sc.FSGroup, dir, err)
		return
	}
	if err := os.Chmod(dir, 0o2775); err != nil {
		klog.Warningf("pod %s/%s: fsGroup %d on %s: %v", pod.Namespace, pod.Name, *sc.FSGroup, dir, err)
	}
}
