package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/groundcrew/groundcrew/config"
	"github.com/groundcrew/groundcrew/store"
)

func newStoreCompact() *cobra.Command {
	c := &cobra.Command{
		Use:   "compact [--store <file>]",
		Short: "Give back the disk space of deleted runs: rewrite the bbolt file (serve stopped), then verify it",
		Long: `bbolt never shrinks its file: the pages of runs deleted by retention are reused
for new data, not given back to the disk. compact rewrites the store into a
new file holding only the data, checks that its audit chain verifies to the
same head and that it holds the same runs, then puts it in place of the old
file. Stop groundcrew serve first: a store in use is refused. It needs free
disk space for the new file (at most the size of the data).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			path, _ := cmd.Flags().GetString("store")
			if config.IsPostgresURL(path) {
				return errPostgresCompact
			}
			if path == "" {
				cfg, err := loadConfig(cmd)
				if err != nil {
					return fmt.Errorf("%w (or pass --store)", err)
				}
				if cfg.PostgresStore() {
					return errPostgresCompact
				}
				path = cfg.Store
			}
			res, err := store.Compact(cmd.Context(), path)
			if err != nil {
				return err
			}
			mb := func(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }
			fmt.Fprintf(cmd.OutOrStdout(), "compacted %s: %s → %s (%s given back) in %s\n", path, mb(res.Before), mb(res.After),
				mb(res.Before-res.After), res.Took.Round(100_000_000))
			fmt.Fprintf(cmd.OutOrStdout(), "audit log verified: %d entries, head %s; %d runs\n", res.Audit, res.Head, res.Runs)
			return nil
		},
	}
	c.Flags().String("store", "", "bbolt store file (default: from the config)")
	return c
}

// errPostgresCompact answers store compact on a PostgreSQL store.
var errPostgresCompact = errors.New("the store is PostgreSQL, which gives space back itself (autovacuum; VACUUM FULL to shrink the files): nothing to compact")
