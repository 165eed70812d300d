package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/groundcrew/groundcrew/runbooks"
	"github.com/groundcrew/groundcrew/scenario"
)

// newTestCmd is `groundcrew test [dir…]`: it runs runbook scenarios against
// the in-process simulator and reports pass/fail per scenario.
func newTestCmd() *cobra.Command {
	var (
		runbookDirs []string
		filter      string
		verbose     bool
		jobs        int
	)
	c := &cobra.Command{
		Use:   "test [dir…]",
		Short: "Run runbook scenarios against the simulator (default: the built-in ones)",
		Long: `Run scenario files (YAML, see scenario/FORMAT.md): each starts a simulated
Concourse world, types the chat inputs in order (runs, reactions, approvals,
time passing) into the real engine, and checks the expected outcome (run and
step states, operations called, the world afterwards). Nothing real is touched.

Without a directory, runs the scenarios of the built-in runbooks. With
--runbooks, your runbook directories are loaded on top of the built-in
library, as the bot does with the runbooks setting of groundcrew.yaml.

Exit status 1 when a scenario fails or a file does not load.`,
		Example: `  groundcrew test
  groundcrew test --runbooks /etc/groundcrew/runbooks ./runbook-tests
  groundcrew test --run 'worker-stalled/' -v`,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			var re *regexp.Regexp
			if filter != "" {
				var err error
				if re, err = regexp.Compile(filter); err != nil {
					return fmt.Errorf("--run %q is not a regular expression: %w", filter, err)
				}
			}
			sources := []runbooks.Source{runbooks.BuiltinSource()}
			for _, d := range runbookDirs {
				if st, err := os.Stat(d); err != nil || !st.IsDir() {
					return fmt.Errorf("--runbooks %s is not a directory", d)
				}
				sources = append(sources, runbooks.DirSource(d))
			}
			scs, loadErr := loadScenarios(args)
			var selected []*scenario.Scenario
			for _, sc := range scs {
				if re == nil || re.MatchString(sc.ID()) {
					selected = append(selected, sc)
				}
			}
			out := cmd.OutOrStdout()
			if loadErr != nil {
				fmt.Fprintf(out, "Some scenario files do not load:\n%v\n\n", loadErr)
			}
			if len(selected) == 0 {
				if loadErr != nil {
					return &exitError{code: 1, err: errors.New("no scenario could be loaded")}
				}
				return &exitError{code: 1, err: errors.New("no scenario matches")}
			}
			o := scenario.Options{Runbooks: sources}
			failed := runScenarios(cmd.Context(), out, selected, o, jobs, verbose)
			switch {
			case failed > 0:
				return &exitError{code: 1, err: fmt.Errorf("%d of %d scenario(s) failed", failed, len(selected))}
			case loadErr != nil:
				return &exitError{code: 1, err: errors.New("some scenario files do not load")}
			}
			return nil
		},
	}
	c.Flags().StringArrayVar(&runbookDirs, "runbooks", nil, "runbook directory loaded on top of the built-in library (repeatable)")
	c.Flags().StringVar(&filter, "run", "", "only scenarios whose runbook/name matches this regular expression")
	c.Flags().BoolVarP(&verbose, "verbose", "v", false, "show the chat thread of passing scenarios too")
	c.Flags().IntVarP(&jobs, "jobs", "j", runtime.GOMAXPROCS(0), "scenarios run at the same time")
	return c
}

// loadScenarios reads the scenario directories, or the built-in scenarios
// when none is given. File names are shown with their directory.
func loadScenarios(dirs []string) ([]*scenario.Scenario, error) {
	if len(dirs) == 0 {
		scs, err := scenario.LoadFS(scenario.Builtin())
		for _, sc := range scs {
			sc.File = "builtin/" + sc.File
		}
		return scs, err
	}
	var (
		all  []*scenario.Scenario
		errs []error
	)
	for _, d := range dirs {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			errs = append(errs, fmt.Errorf("%s is not a directory", d))
			continue
		}
		scs, err := scenario.LoadFS(os.DirFS(d))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", d, err))
		}
		for _, sc := range scs {
			sc.File = filepath.Join(d, sc.File)
		}
		all = append(all, scs...)
	}
	return all, errors.Join(errs...)
}

// runScenarios runs the scenarios, jobs at a time, and prints each result
// in file order as soon as it and those before it are done. It returns the
// number of failures.
func runScenarios(ctx context.Context, out io.Writer, scs []*scenario.Scenario, o scenario.Options, jobs int, verbose bool) int {
	if jobs < 1 {
		jobs = 1
	}
	start := time.Now()
	results := make([]*scenario.Result, len(scs))
	done := make([]chan struct{}, len(scs))
	for i := range done {
		done[i] = make(chan struct{})
	}
	sem := make(chan struct{}, jobs)
	var wg sync.WaitGroup
	for i, sc := range scs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(done[i])
			sem <- struct{}{}
			defer func() { <-sem }()
			results[i] = scenario.Run(ctx, sc, o)
		}()
	}
	failed := 0
	for i := range scs {
		<-done[i]
		r := results[i]
		fmt.Fprint(out, r.Report())
		if !r.Passed() {
			failed++
		} else if verbose {
			for _, l := range strings.Split(strings.TrimRight(r.Transcript, "\n"), "\n") {
				fmt.Fprintf(out, "      | %s\n", l)
			}
		}
	}
	wg.Wait()
	fmt.Fprintf(out, "\n%d scenario(s): %d passed, %d failed (%s)\n", len(scs), len(scs)-failed, failed, time.Since(start).Round(time.Millisecond))
	return failed
}
