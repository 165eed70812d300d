package main

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/groundcrew/groundcrew/adapters/concourse"
	"github.com/groundcrew/groundcrew/adapters/console"
	"github.com/groundcrew/groundcrew/config"
	"github.com/groundcrew/groundcrew/internal/secret"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/policy"
)

// demoScript is what the demo types, as different users. $RUN is the
// latest run id; "gate"/"manual" address the latest approval request or
// manual step.
var demoScript = []string{
	"# alice is on call. Concourse infra-prd (simulated here) has a stalled worker. Which runbooks are there?", // storyLines adds the time
	"/runbook list",
	"# She starts the worker-stalled runbook for worker 0. The bot queries Concourse and checks the TSA.",
	"/runbook run worker-stalled target=infra-prd worker=0",
	"# bob takes the manual steps: the exact ssh command through the bastion, then the services.",
	"/as bob",
	"/react manual ✅",
	"/react manual ✅",
	"/react manual ✅",
	"# The worker does not come back within 20 minutes (the demo moves the clock forward, for the bot and the simulated Concourse).",
	"/clock +21m",
	"# Restarting the VM and rebuilding are not wanted tonight: bob skips both; the bot moves to the prune.",
	"/react manual ⏭",
	"/react manual ⏭",
	"# Pruning is destructive: the bot shows the exact plan and waits. alice tries to approve her own run…",
	"/as alice",
	"/react gate ✅",
	"# …and is refused. carol, also on call, approves: the bot re-checks the plan, prunes, and verifies.",
	"/as carol",
	"/react gate ✅",
	"/runbook status $RUN",
	"# With `groundcrew serve` all of this is journaled in the store (the demo's is temporary): `groundcrew runs show <run>`, `groundcrew audit verify`.",
	"# Try any other runbook with `groundcrew demo --no-script` (/runbook list, /help).",
}

// The demo tells its story at night, at a fixed time of a fixed day, so
// what the script says ("03:12") is what the messages show.
var (
	demoStoryStart      = time.Date(2026, 11, 29, 3, 12, 0, 0, time.UTC)
	demoAlertStoryStart = time.Date(2026, 11, 29, 4, 12, 0, 0, time.UTC)
)

// storyClock is the one clock of the demo's world: the engine, the console,
// the incidents, the Concourse simulator and its client all read it. It
// starts at the story's time, runs at the speed of the real clock (waits
// poll, durations grow) and jumps forward on /clock.
type storyClock struct {
	mu    sync.Mutex
	start time.Time // story time at began
	began time.Time // real time the demo started
	off   time.Duration
}

func newStoryClock(start time.Time) *storyClock {
	return &storyClock{start: start, began: time.Now()}
}

func (c *storyClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.start.Add(time.Since(c.began) + c.off)
}

func (c *storyClock) advance(d time.Duration) {
	c.mu.Lock()
	c.off += d
	c.mu.Unlock()
}

// storyLines puts the story's start time in the script's first comment.
func storyLines(start time.Time, lines []string) []string {
	out := slices.Clone(lines)
	out[0] = "# " + start.Format("15:04") + ". " + strings.TrimPrefix(out[0], "# ")
	return out
}

// scriptReader types the script line by line, waiting for the bot after
// each line, then continues with stdin when interactive.
type scriptReader struct {
	lines []string
	delay time.Duration
	then  io.Reader
	buf   []byte
}

func (s *scriptReader) Read(p []byte) (int, error) {
	for len(s.buf) == 0 {
		if len(s.lines) == 0 {
			if s.then == nil {
				return 0, io.EOF
			}
			return s.then.Read(p)
		}
		time.Sleep(s.delay)
		s.buf = []byte(s.lines[0] + "\n")
		s.lines = s.lines[1:]
	}
	n := copy(p, s.buf)
	s.buf = s.buf[n:]
	return n, nil
}

func newDemo() *cobra.Command {
	var interactive, noScript, alert bool
	var delay time.Duration
	c := &cobra.Command{
		Use:   "demo",
		Short: "Watch a runbook run in the terminal against a simulated Concourse",
		Long: `Start groundcrew with the console chat, a store in a temporary directory and an
in-process Concourse simulator (target infra-prd: a stalled worker, 300
pending builds, image-fetch errors). A script plays a full worker-stalled
incident as alice, bob and carol: queries, a manual step, a wait, an approval
gate (with a self-approval refused), the prune and the result. The story
plays at 03:12 UTC (04:12 with --alert) on one clock shared by the bot and
the simulated Concourse; it runs in real time, and /clock +20m moves it on.

With --alert, an Alertmanager alert (posted to the real POST /alertmanager
handler) opens an incident thread instead; bob acknowledges it with 👀 and
starts the suggested runbook from its button. /alert firing|resolved sends
the notification again at the prompt.

With -i you get the prompt afterwards (or only the prompt with --no-script):
type /help for console commands and /runbook help for the bot.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := os.MkdirTemp("", "groundcrew-demo-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			cfg := &config.Config{
				Store:  filepath.Join(dir, "groundcrew.db"),
				Server: config.Server{Listen: "127.0.0.1:0"}, // endpoints on a free port
				Chat: config.Chat{Platform: "console", Console: console.Config{
					Users: []string{"alice", "bob", "carol"}, Groups: map[string][]string{"ci-oncall": {"alice", "bob", "carol"}}}},
				Targets: map[string]*config.Target{"infra-prd": {
					Simulator: &config.Simulator{}, Team: "main",
					Vars:    map[string]string{"zone": "infra-prd", "target": "infra", "cloud": "fe"},
					Workers: concourse.ManualWorkerNaming(),
					// the simulated web node runs with --stalled-worker-timeout 45m
					// (Concourse 8.3): the gate says when it removes the stalled
					// worker by itself; /clock +30m at the gate lets it do so first
					StalledWorkerTimeout: 45 * time.Minute,
				}},
				Approvals: policy.Config{Default: runmodel.Policy{Approvers: []string{"group:ci-oncall"}, Required: 1, Expires: runmodel.Duration(30 * time.Minute)}},
				Log:       config.Log{Level: "warn", Format: "text"},
			}
			// The pages of the demo's runs, on its HTTP server, opened with
			// signed links (a key made for this demo only).
			key := make([]byte, 32)
			_, _ = rand.Read(key)
			cfg.Web = config.Web{LinkKey: secret.Secret(hex.EncodeToString(key)), LinkTTL: config.Days(7 * 24 * time.Hour)}
			script, clock := storyLines(demoStoryStart, demoScript), newStoryClock(demoStoryStart)
			if alert {
				script, clock = storyLines(demoAlertStoryStart, demoAlertScript), newStoryClock(demoAlertStoryStart)
				demoAlertConfig(cfg)
			}
			out := cmd.OutOrStdout()
			tty := term.IsTerminal(int(os.Stdout.Fd()))
			var in io.Reader = &scriptReader{lines: script, delay: delay}
			if noScript {
				in = os.Stdin
			} else if interactive {
				in = &scriptReader{lines: script, delay: delay, then: bufio.NewReader(os.Stdin)}
			}
			var a *app
			copts := console.Options{Color: tty, Echo: !noScript, Now: clock.Now,
				Extra: map[string]func([]string) string{
					"/clock": func(args []string) string {
						if len(args) != 1 || !strings.HasPrefix(args[0], "+") {
							return "usage: /clock +20m   (moves the clock forward: the bot's and the simulated Concourse's)"
						}
						d, err := time.ParseDuration(args[0][1:])
						if err != nil {
							return "usage: /clock +20m"
						}
						clock.advance(d)
						a.eng.Tick(cmd.Context())
						return fmt.Sprintf("the clock moved %s forward", d)
					},
					"/alert": func(args []string) string { return demoAlert(a, clock.Now(), args) },
				},
				AfterLine: func() { _ = a.eng.WaitIdle(cmd.Context()) },
			}
			onListen := func(string) {
				fmt.Fprintf(out, "Pages of the runs and incidents (open while the demo runs; -i keeps it running):\n  %s\n", a.web.links.Site())
			}
			a, err = newApp(cfg, appOptions{In: in, Out: out, Console: copts, Now: clock.Now, Logger: newLogger(cfg, os.Stderr), OnListen: onListen})
			if err != nil {
				return err
			}
			defer a.close()
			fmt.Fprintf(out, "groundcrew demo — console chat, simulated Concourse %s, store %s\n", cfg.Targets["infra-prd"].URL, cfg.Store)
			fmt.Fprintln(out, "Users: alice, bob, carol (group ci-oncall). Approvals: 1 from @ci-oncall, never the requester.")
			return a.run(cmd.Context())
		},
	}
	c.Flags().BoolVarP(&interactive, "interactive", "i", false, "after the script, keep the prompt open (type /help)")
	c.Flags().BoolVar(&noScript, "no-script", false, "skip the script and start at the prompt")
	c.Flags().BoolVar(&alert, "alert", false, "play the incident script instead: an Alertmanager alert opens an incident, the runbook starts from its button")
	c.Flags().DurationVar(&delay, "delay", 700*time.Millisecond, "pause between scripted lines")
	return c
}
