package uninstall

import (
	"fmt"
	"strings"
	"testing"
)

func TestRefusalMessage(t *testing.T) {
	names := make([]string, 23)
	for i := range names {
		names[i] = fmt.Sprintf("team/sb-%d", i)
	}
	tests := []struct {
		name      string
		n         int
		names     []string
		r         Release
		want, not []string
	}{
		{
			name: "helm hook", n: 2, names: names[:2], r: Release{Name: "sandpod", Namespace: "sandpod-system", Revision: 3},
			want: []string{"refusing: 2 Sandboxes exist", "  team/sb-0\n  team/sb-1\n",
				"helm uninstall sandpod -n sandpod-system --no-hooks",
				"helm rollback sandpod 3 -n sandpod-system",
				"helm upgrade sandpod CHART -n sandpod-system --reuse-values --set uninstall.sandboxes=delete"},
			not: []string{"more", "--sandboxes="},
		},
		{
			name: "one, by hand", n: 1, names: names[:1],
			want: []string{"refusing: 1 Sandbox exists", "--sandboxes=keep", "--sandboxes=delete"},
			not:  []string{"helm"},
		},
		{
			name: "long list is cut", n: 23, names: names, r: Release{Name: "sp", Revision: 1},
			want: []string{"refusing: 23 Sandboxes", "team/sb-19\n  ... and 3 more\n", "helm rollback sp 1   #"},
			not:  []string{"team/sb-20"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := RefusalMessage(tt.n, tt.names, tt.r)
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("message lacks %q:\n%s", w, got)
				}
			}
			for _, w := range tt.not {
				if strings.Contains(got, w) {
					t.Errorf("message has %q:\n%s", w, got)
				}
			}
		})
	}
}
