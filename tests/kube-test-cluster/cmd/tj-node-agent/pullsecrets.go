package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// The credentials a kubelet offers a registry for an image: the entries of the pod's
// imagePullSecrets (kubernetes.io/dockerconfigjson or kubernetes.io/dockercfg) whose key matches
// the image's registry host and a prefix of its repository, most specific first
// (k8s.io/kubernetes pkg/credentialprovider: keyring.go, the same rules in short).

// registryCredential is one entry of a pull secret that matches an image.
type registryCredential struct {
	key    string // the entry's key, e.g. "127.0.0.1:5000" or "registry.example.com/ml"
	secret string // namespace/name of the Secret, for messages
	auth   string // base64 of user:password, as in a docker config
}

type dockerAuthEntry struct {
	Auth     string `json:"auth"`
	Username string `json:"username"`
	Password string `json:"password"`
}

// dockerConfigEntries reads a pull Secret: its registry entries by key, or an error naming the
// Secret and what is wrong with it.
func dockerConfigEntries(s *corev1.Secret) (map[string]dockerAuthEntry, error) {
	name := s.Namespace + "/" + s.Name
	switch s.Type {
	case corev1.SecretTypeDockerConfigJson:
		var cfg struct {
			Auths map[string]dockerAuthEntry `json:"auths"`
		}
		if err := json.Unmarshal(s.Data[corev1.DockerConfigJsonKey], &cfg); err != nil {
			return nil, fmt.Errorf("pull secret %s: %s: %v", name, corev1.DockerConfigJsonKey, err)
		}
		return cfg.Auths, nil
	case corev1.SecretTypeDockercfg:
		var auths map[string]dockerAuthEntry
		if err := json.Unmarshal(s.Data[corev1.DockerConfigKey], &auths); err != nil {
			return nil, fmt.Errorf("pull secret %s: %s: %v", name, corev1.DockerConfigKey, err)
		}
		return auths, nil
	}
	return nil, fmt.Errorf("pull secret %s: type %q is neither %s nor %s", name, s.Type,
		corev1.SecretTypeDockerConfigJson, corev1.SecretTypeDockercfg)
}

// splitImage is a normalized image's registry host and repository path (without tag or digest).
func splitImage(normalized string) (host, repo string) {
	name, _, _ := strings.Cut(normalized, "@")
	host, repo, _ = strings.Cut(name, "/")
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo = repo[:i]
	}
	return host, repo
}

// keyMatches: a docker config key (host[:port][/path], a scheme allowed, `*` globs within a host
// name's labels) matches the image's host (ports equal) and a prefix of its repository.
func keyMatches(key, host, repo string) bool {
	key = strings.TrimPrefix(strings.TrimPrefix(key, "https://"), "http://")
	keyHost, keyPath, _ := strings.Cut(key, "/")
	if keyHost == "index.docker.io" {
		keyHost = "docker.io"
	}
	if strings.Count(keyHost, ".") != strings.Count(host, ".") {
		return false
	}
	if ok, err := path.Match(keyHost, host); err != nil || !ok {
		return false
	}
	keyPath = strings.TrimSuffix(keyPath, "/")
	if keyPath == "" || keyPath == "v1" || keyPath == "v2" { // docker's own keys end in /v1/
		return true
	}
	return repo == keyPath || strings.HasPrefix(repo, keyPath+"/")
}

// credentialsFor: the entries of the secrets that match image, the longest key first; an entry
// without auth has it made from username and password.
func credentialsFor(normalized string, secrets []*corev1.Secret) ([]registryCredential, []error) {
	host, repo := splitImage(normalized)
	var out []registryCredential
	var errs []error
	for _, s := range secrets {
		entries, err := dockerConfigEntries(s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for key, e := range entries {
			if !keyMatches(key, host, repo) {
				continue
			}
			auth := e.Auth
			if auth == "" && e.Username != "" {
				auth = base64.StdEncoding.EncodeToString([]byte(e.Username + ":" + e.Password))
			}
			out = append(out, registryCredential{key: key, secret: s.Namespace + "/" + s.Name, auth: auth})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i].key) > len(out[j].key) })
	return out, errs
}

// authFileFor is a containers-auth.json (what `buildah login --authfile` writes) holding one
// credential for host, or none (an anonymous pull that reads no other credentials).
func authFileFor(host string, c *registryCredential) []byte {
	auths := map[string]dockerAuthEntry{}
	if c != nil {
		auths[host] = dockerAuthEntry{Auth: c.auth}
	}
	b, _ := json.Marshal(map[string]any{"auths": auths})
	return b
}
