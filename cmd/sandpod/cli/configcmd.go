package cli

import (
	"github.com/spf13/cobra"
)

// configView is `sandpod config -o json`: the settings, the token only as
// whether one is set.
type configView struct {
	Address    string            `json:"address"`
	Namespace  string            `json:"namespace"`
	TokenSet   bool              `json:"tokenSet"`
	Insecure   bool              `json:"insecure"`
	TLSCA      string            `json:"tlsCA,omitempty"`
	ConfigFile string            `json:"configFile,omitempty"`
	Sources    map[string]string `json:"sources"`
}

func (a *app) configCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "config",
		Short: "show where the CLI connects and where each setting comes from",
		Long: `Show the address, namespace, token (only whether one is set) and TLS setting
the user commands use, and where each comes from. Each setting is taken from
the first of: its flag (--address, --token, --namespace, --insecure), the
environment ($SANDPOD_ADDRESS, $SANDPOD_TOKEN, $SANDPOD_NAMESPACE), the
config file (--config, else $SANDPOD_CONFIG, else
~/.config/sandpod/config.yaml), the default.`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			format, err := a.outputFormat("table", "wide", "json", "yaml")
			if err != nil {
				return err
			}
			s, err := a.resolve()
			if err != nil {
				return err
			}
			v := configView{
				Address: s.Address, Namespace: s.Namespace, TokenSet: s.Token != "", Insecure: s.Insecure, TLSCA: s.TLSCA,
				ConfigFile: s.ConfigFile, Sources: s.Sources,
			}
			if format == "json" || format == "yaml" {
				return writeData(a.out, format, v)
			}
			token := "none"
			if v.TokenSet {
				token = "set (hidden)"
			}
			insecure := "no"
			if v.Insecure {
				insecure = "yes"
			}
			t := newTable(a.out, "SETTING", "VALUE", "FROM")
			t.row("address", s.Address, s.Sources["address"])
			t.row("namespace", s.Namespace, s.Sources["namespace"])
			t.row("token", token, s.Sources["token"])
			t.row("insecure", insecure, s.Sources["insecure"])
			t.row("tls ca", orDash(s.TLSCA), s.Sources["tls-ca"])
			t.row("config file", orDash(s.ConfigFile), "")
			return t.flush()
		},
	}
}
