package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// A claim is mounted only once Bound, at its PersistentVolume's hostPath, as the kubelet would.
func TestClaimHostPathFollowsTheBoundVolume(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pv-1")
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "digits-checkpoint"},
		Status:     corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending},
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-1"},
		Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{
			HostPath: &corev1.HostPathVolumeSource{Path: dir}}},
	}
	cs := fake.NewSimpleClientset(claim, pv)
	ctx := context.Background()
	if _, err := claimHostPath(ctx, cs, "default", "digits-checkpoint"); err == nil || !strings.Contains(err.Error(), "not Bound yet") {
		t.Fatalf("a Pending claim: err = %v, want one saying it is not Bound yet", err)
	}
	claim.Status.Phase = corev1.ClaimBound
	claim.Spec.VolumeName = "pv-1"
	if _, err := cs.CoreV1().PersistentVolumeClaims("default").Update(ctx, claim, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := claimHostPath(ctx, cs, "default", "digits-checkpoint")
	if err != nil || got != dir {
		t.Fatalf("claimHostPath = %q, %v; want %q", got, err, dir)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		t.Fatalf("the volume's directory was not made: %v", err)
	}
	if _, err := claimHostPath(ctx, cs, "default", "no-such-claim"); err == nil {
		t.Fatal("a missing claim mounted")
	}
}

// Volumes a single machine cannot serve are a configuration error, not a retry.
func TestClaimOfANetworkVolumeIsAConfigError(t *testing.T) {
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "nfs"},
		Spec:       corev1.PersistentVolumeClaimSpec{VolumeName: "pv-nfs"},
		Status:     corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-nfs"},
		Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{
			NFS: &corev1.NFSVolumeSource{Server: "nfs.example", Path: "/export"}}},
	}
	_, err := claimHostPath(context.Background(), fake.NewSimpleClientset(claim, pv), "default", "nfs")
	var ce *configError
	if err == nil || !errors.As(err, &ce) {
		t.Fatalf("err = %v, want a configuration error", err)
	}
}
