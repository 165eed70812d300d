package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/opmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/store/pgstore"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/groundcrew/groundcrew/adapters/chatplatform"
	"github.com/groundcrew/groundcrew/adapters/console"
	"github.com/groundcrew/groundcrew/bot"
	"github.com/groundcrew/groundcrew/config"
	"github.com/groundcrew/groundcrew/runbooks"
	"github.com/groundcrew/groundcrew/store"
)

func newServe() *cobra.Command {
	return &cobra.Command{
		Use:   "serve",
		Short: "Run the bot with the configured chat platform",
		Long: `Run the bot. With chat.platform: console it reads one command per line from
standard input (e.g. printf '/runbook list\n' | groundcrew serve); at the end of
input it finishes what can run without a person, then exits. Runs waiting for a
person stay in the store and resume on the next start.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			if cfg.PostgresStore() {
				return serveHA(cmd.Context(), cfg, appOptions{In: cmd.InOrStdin(), Out: cmd.OutOrStdout()})
			}
			tty, scripted := isTerminal(cmd.OutOrStdout()), !isTerminal(cmd.InOrStdin())
			var a *app
			copts := console.Options{Color: tty, Echo: scripted}
			if scripted {
				// Scripted input: let the bot settle after each line so the
				// transcript reads in order.
				copts.AfterLine = func() { _ = a.eng.WaitIdle(cmd.Context()) }
			}
			a, err = newApp(cfg, appOptions{Console: copts, In: cmd.InOrStdin(), Out: cmd.OutOrStdout()})
			if err != nil {
				return err
			}
			defer a.close()
			return a.run(cmd.Context())
		},
	}
}

func newLint() *cobra.Command {
	return &cobra.Command{
		Use:   "lint [dir|file…]",
		Short: "Validate runbook files and directories (default: the built-in library)",
		Long: `Check runbook YAML files, given one by one or as directories (searched
recursively for *.yaml and *.yml): every problem is reported with
file:line:column. Errors make the runbook unavailable (exit status 1);
warnings do not (a when without because: people would read the expression).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			reg, err := catalog()
			if err != nil {
				return err
			}
			var all runbooks.ErrorList
			n := 0
			if len(args) == 0 {
				loaded, problems := runbooks.LintSource(runbooks.BuiltinSource(), reg)
				n, all = loaded, problems
			}
			for _, d := range args {
				st, err := os.Stat(d)
				if err != nil {
					return fmt.Errorf("%s: no such file or directory", d)
				}
				if !st.IsDir() {
					data, err := os.ReadFile(d)
					if err != nil {
						return err
					}
					ok, problems := runbooks.LintFile(d, data, reg)
					if ok {
						n++
					}
					all = append(all, problems...)
					continue
				}
				loaded, problems := runbooks.LintSource(runbooks.DirSource(strings.TrimSuffix(d, "/")), reg)
				n += loaded
				all = append(all, problems...)
			}
			if len(all) > 0 {
				fmt.Fprintln(cmd.OutOrStdout(), all.Error())
			}
			errs, warns := len(all.Errors()), len(all)-len(all.Errors())
			if errs > 0 {
				return &exitError{code: 1, err: fmt.Errorf("%d problem(s) found%s", errs, andWarnings(warns))}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%d runbook(s) OK%s\n", n, andWarnings(warns))
			return nil
		},
	}
}

// andWarnings is ", 2 warning(s)" ("" for none).
func andWarnings(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(", %d warning(s)", n)
}

// catalog is the registry of every operation groundcrew knows, for linting
// without a configuration.
func catalog() (*opmodel.Registry, error) {
	a := &app{cfg: emptyConfig()}
	if err := a.providers(); err != nil {
		return nil, err
	}
	a.close()
	return a.reg, nil
}

func newConfigCmd() *cobra.Command {
	c := &cobra.Command{Use: "config", Short: "Work with the configuration file"}
	c.AddCommand(&cobra.Command{
		Use:   "check",
		Short: "Validate the configuration file (secrets are read but never printed)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			// A broken runbook file is one problem among others: the
			// policy and routes are still checked (against the runbooks
			// that load, the broken names unavailable), so one run of
			// config check lists everything to fix.
			var problems []error
			a, err := newAppForCheck(cfg)
			if a == nil {
				return err
			}
			if err != nil {
				problems = append(problems, err)
			}
			// The chat adapters check their settings (token shapes,
			// required keys) without calling the platform.
			ad, err := chatplatform.Open(cfg.Chat, chatplatform.Deps{})
			if err != nil {
				return err
			}
			chat := ad.Chat
			reg, err := catalog()
			if err != nil {
				return err
			}
			log := newLogger(cfg, cmd.ErrOrStderr())
			live, stop, err := liveTeams(cfg, log)
			if err != nil {
				problems = append(problems, err)
			}
			defer stop()
			if err := checkSetup(cmd.Context(), cfg, reg, a, chat, live, log); err != nil {
				problems = append(problems, err)
			}
			if err := checkRoutes(cfg, a); err != nil {
				problems = append(problems, err)
			}
			if len(problems) > 0 {
				return errors.Join(problems...)
			}
			where := cfg.Store
			if cfg.PostgresStore() {
				where = "PostgreSQL " + pgstore.Redact(cfg.StorePostgres.DSN.Value())
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s is valid: %d target(s) (%s), chat %s, %d runbook(s), store %s\n",
				cfg.Path, len(cfg.Targets), strings.Join(cfg.TargetNames(), ", "), cfg.Chat.Platform, len(a.List()), where)
			if w := webSummary(cfg); w != "" {
				fmt.Fprintln(cmd.OutOrStdout(), w)
			}
			for _, l := range stalledTimeoutLines(cfg) {
				fmt.Fprintln(cmd.OutOrStdout(), l)
			}
			return nil
		},
	})
	return c
}

// stalledTimeoutLines explains targets.<t>.stalled_worker_timeout for
// config check: what the bot does with each target's value, and what a
// target without one is assumed to do.
func stalledTimeoutLines(cfg *config.Config) []string {
	var out, unset []string
	for _, name := range cfg.TargetNames() {
		d := cfg.Targets[name].StalledWorkerTimeout
		if d <= 0 {
			unset = append(unset, name)
			continue
		}
		out = append(out, fmt.Sprintf("targets.%s.stalled_worker_timeout %s: Concourse removes a worker stalled longer than that by itself "+
			"(the web node's --stalled-worker-timeout, Concourse 8.3); gates, /runbook status, digests and watch rules say when, "+
			"worker-stalled offers to wait for it when it is near, and a prune it made unnecessary is not sent", name, d))
	}
	if len(unset) > 0 {
		out = append(out, fmt.Sprintf("stalled_worker_timeout is not set for %s: the bot assumes the web node never removes stalled workers by itself "+
			"(--stalled-worker-timeout 0s, Concourse's default); if yours sets it (8.3+), give the same value here, e.g. stalled_worker_timeout: 10m",
			strings.Join(unset, ", ")))
	}
	return out
}

// newAppForCheck loads the runbook library the configuration asks for. With
// broken runbook files it returns the library of those that load and the
// errors.
func newAppForCheck(c *config.Config) (*runbooks.Library, error) {
	reg, err := catalog()
	if err != nil {
		return nil, err
	}
	sources := []runbooks.Source{runbooks.BuiltinSource()}
	for _, d := range c.Runbooks {
		sources = append(sources, runbooks.DirSource(d))
	}
	lib, err := runbooks.NewLibrary(reg, sources...)
	var bad runbooks.ErrorList
	if err != nil && !(errors.As(err, &bad) && lib != nil) {
		return nil, fmt.Errorf("runbooks:\n%w", err)
	}
	if err != nil {
		// As serve: the runbooks that load are checked on, the broken
		// ones are unavailable.
		return lib, fmt.Errorf("runbooks:\n%w", err)
	}
	return lib, nil
}

// openStore opens the store for the runs and audit commands. When a
// running serve holds it, they read it through serve's admin socket.
func openStore(cmd *cobra.Command) (storeReader, func(), error) {
	path, _ := cmd.Flags().GetString("store")
	socket := path + ".sock"
	if config.IsPostgresURL(path) {
		db, err := openPostgresDSN(path, 0, false)
		if err != nil {
			return nil, nil, err
		}
		return db, func() { _ = db.Close() }, nil
	}
	if path == "" {
		cfg, err := loadConfig(cmd)
		if err != nil {
			return nil, nil, fmt.Errorf("%w (or pass --store)", err)
		}
		if cfg.PostgresStore() {
			db, err := openPostgres(cfg, false)
			if err != nil {
				return nil, nil, err
			}
			return db, func() { _ = db.Close() }, nil
		}
		path, socket = cfg.Store, cfg.Server.AdminSocket
	}
	if _, err := os.Stat(path); err != nil {
		return nil, nil, fmt.Errorf("store %s: %w", path, err)
	}
	// A running serve holds the store: ask it first, rather than wait for
	// the file lock to time out.
	if socket != "off" && socketAnswers(socket) {
		return newAdminClient(socket, path), func() {}, nil
	}
	db, err := store.Open(path, store.Options{Timeout: 200 * time.Millisecond})
	if errors.Is(err, runmodel.ErrLocked) && socket != "off" {
		if _, serr := os.Stat(socket); serr == nil {
			return newAdminClient(socket, path), func() {}, nil
		}
	}
	if err != nil {
		return nil, nil, err
	}
	return db, func() { _ = db.Close() }, nil
}

// socketAnswers reports whether a serve listens on the admin socket (a
// socket file left by a killed serve refuses the connection).
func socketAnswers(socket string) bool {
	st, err := os.Stat(socket)
	if err != nil || st.Mode()&os.ModeSocket == 0 {
		return false
	}
	c, err := net.DialTimeout("unix", socket, time.Second)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}

// withStore opens the store for a command and closes it after.
func withStore(fn func(cmd *cobra.Command, args []string, db storeReader) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		db, closeDB, err := openStore(cmd)
		if err != nil {
			return err
		}
		defer closeDB()
		return fn(cmd, args, db)
	}
}

func newRuns() *cobra.Command {
	c := &cobra.Command{Use: "runs", Short: "List, show and export runs from the store (for post-mortems)"}
	c.PersistentFlags().String("store", "", "bbolt store file or postgres:// URL (default: from the config)")
	c.AddCommand(newRunsList())
	show := &cobra.Command{
		Use:     "show <run>",
		Aliases: []string{"export"},
		Short:   "Show a run with its journal (--format markdown|json)",
		Args:    cobra.ExactArgs(1),
		RunE: withStore(func(cmd *cobra.Command, args []string, db storeReader) error {
			r, err := db.GetRun(cmd.Context(), args[0])
			if err != nil {
				if errors.Is(err, chatmodel.ErrNotFound) {
					return fmt.Errorf("no run %q in %s (groundcrew runs list)", args[0], db.Path())
				}
				return err
			}
			j, err := db.Journal(cmd.Context(), r.ID)
			if err != nil {
				return err
			}
			audit, err := db.AuditEntries(cmd.Context(), r.ID)
			if err != nil {
				return err
			}
			format, _ := cmd.Flags().GetString("format")
			switch format {
			case "json":
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				changes := bot.RunChanges(r, j)
				if changes == nil {
					changes = []bot.Change{}
				}
				teams := r.Teams()
				if teams == nil {
					teams = []string{}
				}
				return enc.Encode(map[string]any{"run": r, "changes": changes, "teams": teams, "journal": j, "audit": audit})
			case "markdown", "md":
				fmt.Fprint(cmd.OutOrStdout(), bot.RunMarkdown(r, j))
				return nil
			}
			return fmt.Errorf("--format %q: use markdown or json", format)
		}),
	}
	show.Flags().String("format", "markdown", "markdown or json")
	c.AddCommand(show)
	return c
}

func newAudit() *cobra.Command {
	c := &cobra.Command{Use: "audit", Short: "Verify or export the hash-chained audit log"}
	c.PersistentFlags().String("store", "", "bbolt store file or postgres:// URL (default: from the config)")
	verify := &cobra.Command{
		Use:   "verify [--expect <count>:<hash>]",
		Short: "Check that no audit entry was edited, deleted or reordered, and print the chain head",
		Long: `Walk the hash chain of the audit log and print its head as head: <count>:<hash>.
A hash chain cannot see its last entries cut off: keep heads outside the store
(the bot logs one at start and after each run, and posts one to
audit.checkpoint_channel) and pass one with --expect. Exit status: 0 intact,
1 the expected head is no longer in the log, 2 the chain is broken.`,
		Args: cobra.NoArgs,
		RunE: withStore(func(cmd *cobra.Command, _ []string, db storeReader) error {
			var want *runmodel.AuditHead
			if s, _ := cmd.Flags().GetString("expect"); s != "" {
				h, err := runmodel.ParseAuditHead(s)
				if err != nil {
					return fmt.Errorf("--expect: %w", err)
				}
				want = &h
			}
			n, err := db.VerifyAudit(cmd.Context())
			if err != nil {
				return &exitError{code: 2, err: fmt.Errorf("audit log NOT intact after %d good entries: %w", n, err)}
			}
			head, err := db.AuditHead(cmd.Context())
			if err != nil {
				return err
			}
			if want != nil {
				if err := db.VerifyAuditHead(cmd.Context(), *want); err != nil {
					fmt.Fprintf(cmd.OutOrStdout(), "head: %s\n", head)
					return &exitError{code: 1, err: fmt.Errorf("audit log NOT intact: %w", err)}
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "audit log intact: %d entries, chain verified\n", n)
			if want != nil {
				fmt.Fprintf(cmd.OutOrStdout(), "contains the expected head %s\n", want)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "head: %s\n", head)
			return nil
		}),
	}
	verify.Flags().String("expect", "", "a head published earlier (<count>:<hash>); fail if the log no longer contains it")
	c.AddCommand(verify)
	c.AddCommand(&cobra.Command{
		Use:   "export",
		Short: "Write the audit log as JSON lines (for a SIEM)",
		Args:  cobra.NoArgs,
		RunE: withStore(func(cmd *cobra.Command, _ []string, db storeReader) error {
			// Streamed in order, a page at a time: memory stays flat here
			// and in a running serve.
			enc := json.NewEncoder(cmd.OutOrStdout())
			return eachAudit(cmd.Context(), db, func(e runmodel.AuditEntry) error { return enc.Encode(e) })
		}),
	})
	return c
}

// isTerminal reports whether a reader or writer is a terminal.
func isTerminal(f any) bool {
	if o, ok := f.(*os.File); ok {
		return term.IsTerminal(int(o.Fd()))
	}
	return false
}
