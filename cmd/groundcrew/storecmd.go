package main

// groundcrew store: moving and maintaining the store.
//
//	store copy --from <bbolt file> --to <dsn>   move an installation to PostgreSQL
//	store compact [--store <file>]              give back the space of deleted runs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/groundcrew/groundcrew/config"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/store"
	"github.com/groundcrew/groundcrew/store/pgstore"
)

// newStoreCmd is the parent of the store maintenance commands.
func newStoreCmd() *cobra.Command {
	c := &cobra.Command{Use: "store", Short: "Move and maintain the store (copy to PostgreSQL, compact)"}
	c.AddCommand(newStoreCopy())
	c.AddCommand(newStoreCompact())
	return c
}

func newStoreCopy() *cobra.Command {
	c := &cobra.Command{
		Use:   "copy --from <bbolt file> --to <dsn>",
		Short: "Copy a bbolt store into an empty PostgreSQL database, then verify it",
		Long: `Copy everything a bbolt store holds (runs with their journals, the audit
log with its hashes, the message index, event ids, the outbox, digests,
incidents, kv) into an empty PostgreSQL database, in one transaction, then
verify the audit chain and compare the counts.

Stop groundcrew serve first (the bbolt file is locked while it runs). The
target must be empty: a half-done copy leaves nothing behind. The DSN can
come from --to, --to-file (a file holding it) or GROUNDCREW_STORE_DSN.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			from, _ := cmd.Flags().GetString("from")
			to, _ := cmd.Flags().GetString("to")
			toFile, _ := cmd.Flags().GetString("to-file")
			if from == "" {
				return fmt.Errorf("--from: give the bbolt store file to copy")
			}
			dsn, err := copyTarget(to, toFile)
			if err != nil {
				return err
			}
			return storeCopy(cmd.Context(), from, dsn, func(format string, args ...any) {
				fmt.Fprintf(cmd.OutOrStdout(), format+"\n", args...)
			})
		},
	}
	c.Flags().String("from", "", "bbolt store file to copy")
	c.Flags().String("to", "", "DSN of the empty PostgreSQL database (postgres://user@host:5432/db)")
	c.Flags().String("to-file", "", "file holding the DSN (instead of --to)")
	return c
}

func copyTarget(to, toFile string) (string, error) {
	switch {
	case to != "" && toFile != "":
		return "", fmt.Errorf("give either --to or --to-file, not both")
	case toFile != "":
		return pgstore.ReadDSN(toFile)
	case to != "":
		return to, nil
	case os.Getenv(config.EnvStoreDSN) != "":
		return os.Getenv(config.EnvStoreDSN), nil
	}
	return "", fmt.Errorf("--to: give the DSN of the PostgreSQL database to copy into (or --to-file, or %s)", config.EnvStoreDSN)
}

// storeCopy copies the bbolt store at from into the empty database dsn.
func storeCopy(ctx context.Context, from, dsn string, say func(string, ...any)) error {
	if _, err := os.Stat(from); err != nil {
		return fmt.Errorf("--from %s: %w", from, err)
	}
	src, err := store.Open(from, store.Options{Timeout: 500 * time.Millisecond})
	if errors.Is(err, runmodel.ErrLocked) {
		return fmt.Errorf("%w: stop groundcrew serve before copying its store", err)
	}
	if err != nil {
		return err
	}
	defer src.Close()
	n, err := src.VerifyAudit(ctx)
	if err != nil {
		return fmt.Errorf("the source audit log does not verify, nothing copied: %w", err)
	}
	dst, err := pgstore.Open(ctx, dsn, pgstore.Options{})
	if err != nil {
		return err
	}
	defer dst.Close()
	start := time.Now()
	say("copying %s (audit log: %d entries, verified) to %s …", from, n, dst.Path())
	copied, err := dst.Load(ctx, func(l *pgstore.Loader) error {
		return src.Dump(store.Dump{Run: l.Run, Message: l.Message, Audit: l.Audit, Event: l.Event, Outbox: l.Outbox,
			Digest: l.Digest, KV: l.KV, Incident: l.Incident, IncidentKey: l.IncidentKey})
	})
	if err != nil {
		return fmt.Errorf("copying %s: %w (nothing was written)", from, err)
	}
	got, err := dst.Counts(ctx)
	if err != nil {
		return err
	}
	if got != copied {
		return fmt.Errorf("after the copy the target holds %s, but the source had %s", got, copied)
	}
	m, err := dst.VerifyAudit(ctx)
	if err != nil {
		return fmt.Errorf("the copied audit log does not verify: %w", err)
	}
	if m != n {
		return fmt.Errorf("the copied audit log has %d entries, the source %d", m, n)
	}
	sh, _ := src.AuditHead(ctx)
	dh, _ := dst.AuditHead(ctx)
	if sh != dh {
		return fmt.Errorf("the copied audit head is %s, the source's %s", dh, sh)
	}
	say("copied %s in %s", got, time.Since(start).Round(time.Millisecond))
	say("audit chain verified: %d entries, head %s (the same as the source: earlier checkpoints still verify)", m, dh)
	say("next: set store: {postgres: {dsn_file: …}} in the config and start groundcrew serve")
	return nil
}
