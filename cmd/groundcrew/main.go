// Command groundcrew is a ChatOps bot that runs Concourse incident runbooks
// as step-by-step chat workflows with approval gates. It is the composition
// root: it reads the flags and GROUNDCREW_CONFIG, handles signals and wires
// the parts (config and internal/secret read the other GROUNDCREW_*
// variables).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/groundcrew/groundcrew/config"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRoot().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "groundcrew:", err)
		var exit *exitError
		if errors.As(err, &exit) {
			os.Exit(exit.code)
		}
		os.Exit(1)
	}
}

// exitError carries a specific exit code.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "groundcrew",
		Short: "ChatOps bot that runs Concourse incident runbooks step by step, with approval gates",
		Long: `groundcrew runs Concourse CI incident runbooks as step-by-step chat workflows in
Slack, Mattermost or the terminal. It queries Concourse, shows what it found,
posts the exact commands for steps a human must do, and stops at an approval
gate before anything destructive. All state lives in one bbolt file, or in PostgreSQL
for a hot standby (README: Running highly available).

Start with:  groundcrew demo`,
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringP("config", "c", "", "config file (default $"+config.EnvConfig+" or ./groundcrew.yaml)")
	root.AddCommand(newServe(), newDemo(), newLint(), newTestCmd(), newSimCmd(), newConfigCmd(), newRuns(), newAudit(), newStoreCmd(), newWebCmd())
	return root
}

// configPath returns the config file path from the flag, the environment or the default.
func configPath(cmd *cobra.Command) string {
	if p, _ := cmd.Flags().GetString("config"); p != "" {
		return p
	}
	if p := os.Getenv(config.EnvConfig); p != "" {
		return p
	}
	return "groundcrew.yaml"
}

func loadConfig(cmd *cobra.Command) (*config.Config, error) {
	path := configPath(cmd)
	cfg, err := config.Load(path)
	if err != nil {
		var errs config.Errors
		if errors.As(err, &errs) {
			return nil, fmt.Errorf("%d problem(s) in %s:\n%w", len(errs), path, err)
		}
		return nil, err
	}
	return cfg, nil
}
