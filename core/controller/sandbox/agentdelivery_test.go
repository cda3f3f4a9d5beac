package sandbox

import "testing"

func TestResolveAgentDelivery(t *testing.T) {
	for _, tc := range []struct {
		flag, server string
		want         AgentDelivery
		wantErr      bool
	}{
		{"auto", "v1.37.2", AgentImageVolume, false},
		{"auto", "v1.35.0", AgentImageVolume, false},
		{"auto", "v1.34.9-gke.100", AgentInitContainer, false},
		{"", "v1.30.0", AgentInitContainer, false},
		{"init-container", "v1.37.2", AgentInitContainer, false},
		{"image-volume", "v1.31.0", AgentImageVolume, false},
		{"auto", "not a version", "", true},
		{"volume", "v1.37.2", "", true},
	} {
		got, err := ResolveAgentDelivery(tc.flag, tc.server)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("ResolveAgentDelivery(%q, %q) = %q, %v; want %q, error %v", tc.flag, tc.server, got, err, tc.want, tc.wantErr)
		}
	}
	if d := agentImageDir(); d != "usr/local/bin" {
		t.Errorf("agentImageDir = %q", d)
	}
}

func TestBuildPodWithAgentImageVolume(t *testing.T) {
	pod, err := BuildPod(makeSandbox("sb").obj(), PodConfig{BridgeCAPin: testPin, BridgeCAKey: testKey, AgentImage: "agent:1", AgentDelivery: AgentImageVolume})
	if err != nil {
		t.Fatal(err)
	}
	if len(pod.Spec.InitContainers) != 0 {
		t.Errorf("init containers %v: an image volume needs none", pod.Spec.InitContainers)
	}
	var found bool
	for _, v := range pod.Spec.Volumes {
		if v.Name == agentVolume {
			found = v.Image != nil && v.Image.Reference == "agent:1" && v.EmptyDir == nil
		}
	}
	if !found {
		t.Errorf("no image volume of agent:1 in %+v", pod.Spec.Volumes)
	}
	main := pod.Spec.Containers[0]
	if main.Command[0] != AgentBinary {
		t.Errorf("command %v does not start the agent at %s", main.Command, AgentBinary)
	}
	for _, m := range main.VolumeMounts {
		if m.Name == agentVolume && (m.MountPath != agentDir || m.SubPath != "usr/local/bin" || !m.ReadOnly) {
			t.Errorf("agent mount = %+v, want %s from the image's usr/local/bin, read-only", m, agentDir)
		}
	}
}
