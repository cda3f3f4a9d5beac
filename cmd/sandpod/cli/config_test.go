package cli

import (
	"io/fs"
	"testing"
)

func TestResolveSettingsPrecedence(t *testing.T) {
	const file = "address: file:1\ntoken: file-token\nnamespace: file-ns\ninsecure: true\n"
	env := map[string]string{"SANDPOD_ADDRESS": "env:1", "SANDPOD_TOKEN": "env-token", "SANDPOD_NAMESPACE": "env-ns"}
	yes := true
	for _, tc := range []struct {
		name      string
		flags     settingsInput
		env       map[string]string
		files     map[string]string
		want      Settings
		wantFrom  string // source of the address
		wantError string
	}{
		{name: "defaults", want: Settings{Address: "127.0.0.1:50051", Namespace: "default"}, wantFrom: "default"},
		{name: "default file", files: map[string]string{"/home/.config/sandpod/config.yaml": file},
			want: Settings{Address: "file:1", Token: "file-token", Namespace: "file-ns", Insecure: true}, wantFrom: "config /home/.config/sandpod/config.yaml"},
		{name: "env over file", env: env, files: map[string]string{"/home/.config/sandpod/config.yaml": file},
			want: Settings{Address: "env:1", Token: "env-token", Namespace: "env-ns", Insecure: true}, wantFrom: "$SANDPOD_ADDRESS"},
		{name: "flags over env", env: env, files: map[string]string{"/home/.config/sandpod/config.yaml": file},
			flags: settingsInput{address: flagValue{"flag:1", true}, token: flagValue{"", true}, namespace: flagValue{"flag-ns", true}, insecure: new(bool)},
			want:  Settings{Address: "flag:1", Token: "", Namespace: "flag-ns"}, wantFrom: "flag --address"},
		{name: "SANDPOD_CONFIG replaces the default file", env: map[string]string{"SANDPOD_CONFIG": "/other.yaml"},
			files: map[string]string{"/home/.config/sandpod/config.yaml": file, "/other.yaml": "address: other:1\n"},
			want:  Settings{Address: "other:1", Namespace: "default"}, wantFrom: "config /other.yaml"},
		{name: "--config over SANDPOD_CONFIG", env: map[string]string{"SANDPOD_CONFIG": "/other.yaml"},
			flags: settingsInput{config: flagValue{"/mine.yaml", true}, insecure: &yes},
			files: map[string]string{"/other.yaml": "address: other:1\n", "/mine.yaml": "address: mine:1\n"},
			want:  Settings{Address: "mine:1", Namespace: "default", Insecure: true}, wantFrom: "config /mine.yaml"},
		{name: "tlsCA from the file, --tls-ca over it", flags: settingsInput{tlsCA: flagValue{"/flag-ca.pem", true}},
			files: map[string]string{"/home/.config/sandpod/config.yaml": "tlsCA: /file-ca.pem\n"},
			want:  Settings{Address: "127.0.0.1:50051", Namespace: "default", TLSCA: "/flag-ca.pem"}, wantFrom: "default"},
		{name: "a named file must exist", env: map[string]string{"SANDPOD_CONFIG": "/missing.yaml"}, wantError: "/missing.yaml (from $SANDPOD_CONFIG)"},
		{name: "unknown key", files: map[string]string{"/home/.config/sandpod/config.yaml": "adress: x\n"}, wantError: `unknown field "adress"`},
		{name: "not YAML", flags: settingsInput{config: flagValue{"/bad.yaml", true}}, files: map[string]string{"/bad.yaml": "address: [\n"}, wantError: "/bad.yaml (from flag --config)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.flags
			in.getenv = func(k string) string { return tc.env[k] }
			in.defaultConfig = "/home/.config/sandpod/config.yaml"
			in.readFile = func(p string) ([]byte, error) {
				if s, ok := tc.files[p]; ok {
					return []byte(s), nil
				}
				return nil, &fs.PathError{Op: "open", Path: p, Err: fs.ErrNotExist}
			}
			s, err := resolveSettings(in)
			if tc.wantError != "" {
				if err == nil || !contains(err.Error(), tc.wantError) {
					t.Fatalf("got %v, want an error mentioning %q", err, tc.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Address != tc.want.Address || s.Token != tc.want.Token || s.Namespace != tc.want.Namespace || s.Insecure != tc.want.Insecure || s.TLSCA != tc.want.TLSCA {
				t.Fatalf("got %+v, want %+v", *s, tc.want)
			}
			if s.Sources["address"] != tc.wantFrom {
				t.Fatalf("address from %q, want %q", s.Sources["address"], tc.wantFrom)
			}
		})
	}
}
