package cli

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	sandpod "github.com/sandpod/sandpod/clients/go"
)

// EnvConfig names the config file when --config is not given.
const EnvConfig = "SANDPOD_CONFIG"

// fileConfig is the config file (~/.config/sandpod/config.yaml):
//
//	address: sandpod.example.com:443
//	token: s3cret
//	namespace: team-a
//	insecure: false
//	tlsCA: /etc/sandpod/ca.pem
type fileConfig struct {
	Address   string `json:"address,omitempty"`
	Token     string `json:"token,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	// Insecure turns TLS off for a non-loopback address.
	Insecure bool `json:"insecure,omitempty"`
	// TLSCA is a PEM file of the CA that signed the server's certificate
	// (a bridge or serve with --tls-cert from a private CA); it turns TLS
	// on, for a loopback address too.
	TLSCA string `json:"tlsCA,omitempty"`
}

// Settings is where the CLI connects, and where each value came from
// (Sources: "flag --address", "$SANDPOD_ADDRESS", "config FILE",
// "default").
type Settings struct {
	Address   string
	Token     string
	Namespace string
	Insecure  bool
	TLSCA     string
	// ConfigFile is the file read ("" when none).
	ConfigFile string
	Sources    map[string]string
}

// flagValue is a string flag and whether it was given on the command line.
type flagValue struct {
	value string
	set   bool
}

// settingsInput is everything the settings are resolved from.
type settingsInput struct {
	address, token, namespace, config, tlsCA flagValue
	insecure                                 *bool // nil: not given
	getenv                                   func(string) string
	// defaultConfig is ~/.config/sandpod/config.yaml ("" when there is no
	// home directory).
	defaultConfig string
	readFile      func(string) ([]byte, error)
}

// configPath says which config file to read and whether it must exist:
// --config, then $SANDPOD_CONFIG (both must exist), then the default file
// (read when present).
func configPath(in settingsInput) (path, source string, required bool) {
	switch {
	case in.config.set:
		return in.config.value, "flag --config", true
	case in.getenv(EnvConfig) != "":
		return in.getenv(EnvConfig), "$" + EnvConfig, true
	}
	return in.defaultConfig, "default", false
}

// resolveSettings applies the precedence flag > environment > config file >
// default to each value. It fails only on a config file that is named but
// missing, unreadable or invalid.
func resolveSettings(in settingsInput) (*Settings, error) {
	path, from, required := configPath(in)
	var file fileConfig
	s := &Settings{Sources: map[string]string{}}
	if path != "" {
		data, err := in.readFile(path)
		switch {
		case err == nil:
			if err := yaml.UnmarshalStrict(data, &file); err != nil {
				return nil, fmt.Errorf("config file %s (from %s): %s (it knows address, token, namespace, insecure, tlsCA)", path, from, yamlMessage(err))
			}
			s.ConfigFile = path
		case required || !errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("config file %s (from %s): %v", path, from, err)
		}
	}
	fileSource := "config " + s.ConfigFile
	pick := func(key string, flag flagValue, env, fromFile, def string) string {
		switch {
		case flag.set:
			s.Sources[key] = "flag --" + key
			return flag.value
		case env != "" && in.getenv(env) != "":
			s.Sources[key] = "$" + env
			return in.getenv(env)
		case fromFile != "":
			s.Sources[key] = fileSource
			return fromFile
		}
		s.Sources[key] = "default"
		return def
	}
	s.Address = pick("address", in.address, sandpod.EnvAddress, file.Address, sandpod.DefaultAddress)
	s.Token = pick("token", in.token, sandpod.EnvToken, file.Token, "")
	s.Namespace = pick("namespace", in.namespace, sandpod.EnvNamespace, file.Namespace, sandpod.DefaultNamespace)
	s.TLSCA = pick("tls-ca", in.tlsCA, "", file.TLSCA, "")
	switch {
	case in.insecure != nil:
		s.Insecure, s.Sources["insecure"] = *in.insecure, "flag --insecure"
	case file.Insecure:
		s.Insecure, s.Sources["insecure"] = true, fileSource
	default:
		s.Sources["insecure"] = "default"
	}
	return s, nil
}

// defaultConfigFile is $XDG_CONFIG_HOME/sandpod/config.yaml, else
// ~/.config/sandpod/config.yaml.
func defaultConfigFile() string {
	dir, err := os.UserConfigDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "sandpod", "config.yaml")
}

// tokenFileWarning warns about a config file holding a token that others
// can read.
func tokenFileWarning(s *Settings) string {
	if s.ConfigFile == "" || s.Sources["token"] != "config "+s.ConfigFile {
		return ""
	}
	st, err := os.Stat(s.ConfigFile)
	if err != nil || st.Mode().Perm()&0o077 == 0 {
		return ""
	}
	return fmt.Sprintf("sandpod: warning: %s holds a token and is readable by others (chmod 600 %s)", s.ConfigFile, s.ConfigFile)
}

// yamlMessage drops the layers sigs.k8s.io/yaml puts before the point.
func yamlMessage(err error) string {
	msg := err.Error()
	for _, p := range []string{"error unmarshaling JSON: ", "while decoding JSON: ", "json: "} {
		msg = strings.TrimPrefix(msg, p)
	}
	return msg
}

func orDash(s string) string { return cmp.Or(s, "-") }
