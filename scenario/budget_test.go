package scenario

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// The message budget: what a person reads of each built-in runbook, in
// messages and characters, on its main path (scenarios tagged main) and
// its failure paths (tagged failure). budgetFile records the figures and
// the README shows them (between budgetBegin and budgetEnd); a change that
// makes a run noisier fails TestMessageBudget until the figures are
// recorded again, deliberately, with
//
//	go test ./scenario -run TestMessageBudget -update
//
// which rewrites both (say why in the commit).
const (
	budgetFile   = "testdata/budget.txt"
	budgetReadme = "../README.md"
	budgetBegin  = "<!-- message budget: go test ./scenario -run TestMessageBudget -update rewrites this table -->"
	budgetEnd    = "<!-- end of the message budget -->"
	budgetUpdate = "go test ./scenario -run TestMessageBudget -update"
	budgetShown  = "scenario/testdata/budget.txt" // budgetFile, as named in messages
)

// noise is what a person reads of one scenario: the messages posted (and
// the replies shown to one person) and their characters, each message as it
// reads at the end — in its text, and in its details (one tap away: a full
// list, the summary's steps).
type noise struct {
	Messages, Chars, Detail int
}

// budgetStart is the clock's start: the texts (times, dates) have the same
// length on every run of the test.
var budgetStart = time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)

// What varies from one run to the next and is not noise: the simulator's
// port, a measured latency, run ids.
var budgetVarying = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`127\.0\.0\.1:\d+`), "127.0.0.1:PORT"},
	{regexp.MustCompile(`\d+ ms\b`), "N ms"},
	{regexp.MustCompile(`\br-[0-9a-z]{4,}\b`), "r-XXXXXXXXXX"},
}

func measure(res *Result) noise {
	n := noise{Messages: len(res.Messages)}
	count := func(s string) int {
		for _, v := range budgetVarying {
			s = v.re.ReplaceAllString(s, v.with)
		}
		return utf8.RuneCountInString(s)
	}
	for _, m := range res.Messages {
		n.Chars += count(m.Text)
		n.Detail += count(m.Detail)
	}
	return n
}

// played are the results of every built-in scenario, played once for the
// tests that read what the runs posted (the budget, the error said once).
var played struct {
	once sync.Once
	res  map[string]*Result
	err  error
}

// playBuiltin plays every built-in scenario (two at a time: the machine is
// shared) and returns the results by scenario id.
func playBuiltin(t *testing.T) map[string]*Result {
	t.Helper()
	played.once.Do(func() {
		all, err := LoadFS(Builtin())
		if err != nil {
			played.err = err
			return
		}
		var (
			mu  sync.Mutex
			wg  sync.WaitGroup
			sem = make(chan struct{}, 2)
		)
		played.res = map[string]*Result{}
		for _, sc := range all {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				// A generous idle timeout: these run beside the other tests
				// of the package on a busy machine; a figure is only read
				// from a scenario that passed.
				res := Run(context.Background(), sc, Options{Start: budgetStart, IdleTimeout: time.Minute})
				mu.Lock()
				played.res[sc.ID()] = res
				mu.Unlock()
			}()
		}
		wg.Wait()
	})
	require.NoError(t, played.err)
	return played.res
}

// TestMessageBudget compares what every built-in scenario tagged main or
// failure posts with the recorded figures.
func TestMessageBudget(t *testing.T) {
	got := map[string]noise{}
	tag := map[string]string{}
	for id, res := range playBuiltin(t) {
		switch {
		case res.Scenario.HasTag("main"):
			tag[id] = "main"
		case res.Scenario.HasTag("failure"):
			tag[id] = "failure"
		default:
			continue
		}
		require.True(t, res.Passed(), "%s", res.Report())
		got[id] = measure(res)
	}
	if *update {
		require.NoError(t, os.WriteFile(budgetFile, []byte(formatBudget(got, tag)), 0o644))
		readme, err := os.ReadFile(budgetReadme)
		require.NoError(t, err)
		out, err := replaceBudgetTable(readme, budgetTable(got, tag))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(budgetReadme, out, 0o644))
		t.Logf("recorded the message budget in %s and the README", budgetShown)
		return
	}
	data, err := os.ReadFile(budgetFile)
	require.NoError(t, err, "no recorded message budget: run %s", budgetUpdate)
	want, err := parseBudget(data)
	require.NoError(t, err, "%s: run %s to write it again", budgetShown, budgetUpdate)
	var noisier, quieter, gone []string
	for _, id := range sortedKeys(got) {
		g, w := got[id], want[id]
		switch {
		case w == (noise{}):
			noisier = append(noisier, fmt.Sprintf("  %s: %d messages, %d characters, %d in details (not recorded yet)", id, g.Messages, g.Chars, g.Detail))
		case g.Messages > w.Messages || g.Chars > w.Chars || g.Detail > w.Detail:
			noisier = append(noisier, fmt.Sprintf("  %s: %s", id, change(w, g)))
		case g != w:
			quieter = append(quieter, fmt.Sprintf("  %s: %s", id, change(w, g)))
		}
	}
	for _, id := range sortedKeys(want) {
		if _, ok := got[id]; !ok {
			gone = append(gone, "  "+id)
		}
	}
	if len(noisier) > 0 {
		t.Errorf("these runs post more than their recorded message budget (%s):\n%s\n"+
			"Make them say less, or, if the new words are worth it, record the new figures with\n"+
			"  %s\n(it rewrites %s and the README table) and say why in the commit message.",
			budgetShown, strings.Join(noisier, "\n"), budgetUpdate, budgetShown)
	}
	if len(quieter) > 0 || len(gone) > 0 {
		msg := ""
		if len(quieter) > 0 {
			msg += "these runs post less than recorded — well done; record it:\n" + strings.Join(quieter, "\n") + "\n"
		}
		if len(gone) > 0 {
			msg += "these scenarios are recorded but no longer tagged main or failure (or gone):\n" + strings.Join(gone, "\n") + "\n"
		}
		t.Errorf("%sRun %s to record the figures (it rewrites %s and the README table).", msg, budgetUpdate, budgetShown)
	}
	readme, err := os.ReadFile(budgetReadme)
	require.NoError(t, err)
	if want, err := replaceBudgetTable(readme, budgetTable(got, tag)); err != nil || !bytes.Equal(want, readme) {
		t.Errorf("the README's message budget table is not the recorded one (%v): run %s", err, budgetUpdate)
	}
}

// change says how a scenario's figures moved: "messages 9 → 11, characters
// 2310 → 2950 (+28%)", naming only what moved.
func change(was, now noise) string {
	var parts []string
	for _, f := range []struct {
		what     string
		was, now int
	}{{"messages", was.Messages, now.Messages}, {"characters", was.Chars, now.Chars}, {"characters in details", was.Detail, now.Detail}} {
		if f.was == f.now {
			continue
		}
		s := fmt.Sprintf("%s %d → %d", f.what, f.was, f.now)
		if f.was > 0 {
			s += fmt.Sprintf(" (%+.0f%%)", float64(f.now-f.was)*100/float64(f.was))
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// formatBudget writes the figures, one scenario a line: its tag, messages,
// characters, characters in details and id (the id last: it has spaces).
func formatBudget(got map[string]noise, tag map[string]string) string {
	var b strings.Builder
	b.WriteString("# The message budget of the built-in runbooks (scenario/budget_test.go): what each\n")
	b.WriteString("# scenario tagged main or failure posts — messages (replies to one person included)\n")
	b.WriteString("# and their characters, in the text and in the details (one tap away), each message\n")
	b.WriteString("# as it reads at the end. Do not edit by hand: " + budgetUpdate + "\n")
	b.WriteString("# tag\tmessages\tcharacters\tdetails\tscenario\n")
	for _, id := range sortedKeys(got) {
		n := got[id]
		fmt.Fprintf(&b, "%s\t%d\t%d\t%d\t%s\n", tag[id], n.Messages, n.Chars, n.Detail, id)
	}
	return b.String()
}

func parseBudget(data []byte) (map[string]noise, error) {
	out := map[string]noise{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		s := sc.Text()
		if strings.HasPrefix(s, "#") || strings.TrimSpace(s) == "" {
			continue
		}
		f := strings.SplitN(s, "\t", 5)
		if len(f) != 5 {
			return nil, fmt.Errorf("line %d: want tag, messages, characters, details and scenario separated by tabs", line)
		}
		var n noise
		for i, p := range []*int{&n.Messages, &n.Chars, &n.Detail} {
			v, err := strconv.Atoi(f[i+1])
			if err != nil {
				return nil, fmt.Errorf("line %d: messages and characters must be numbers", line)
			}
			*p = v
		}
		out[f[4]] = n
	}
	return out, sc.Err()
}

// budgetTable is the README's table: one row per runbook, its main path
// (the noisiest when it has several) and its noisiest failure path.
func budgetTable(got map[string]noise, tag map[string]string) string {
	type row struct{ main, failure noise }
	rows := map[string]*row{}
	for id, n := range got {
		rb, _, _ := strings.Cut(id, "/")
		r := rows[rb]
		if r == nil {
			r = &row{}
			rows[rb] = r
		}
		worst := &r.failure
		if tag[id] == "main" {
			worst = &r.main
		}
		if n.Chars+n.Detail > worst.Chars+worst.Detail {
			*worst = n
		}
	}
	cell := func(n noise) string {
		if n == (noise{}) {
			return "—"
		}
		return fmt.Sprintf("%d · %s · %s", n.Messages, thousands(n.Chars), thousands(n.Detail))
	}
	var b strings.Builder
	b.WriteString("| runbook | main path: messages · characters · in details | noisiest failure path |\n|---|---|---|\n")
	for _, rb := range sortedKeys(rows) {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", rb, cell(rows[rb].main), cell(rows[rb].failure))
	}
	return b.String()
}

func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// replaceBudgetTable puts table between the README's budget markers.
func replaceBudgetTable(readme []byte, table string) ([]byte, error) {
	s := string(readme)
	i := strings.Index(s, budgetBegin)
	j := strings.Index(s, budgetEnd)
	if i < 0 || j < i {
		return nil, fmt.Errorf("%s has no message budget table: put the lines %q and %q where it goes", "README.md", budgetBegin, budgetEnd)
	}
	return []byte(s[:i+len(budgetBegin)] + "\n" + table + s[j:]), nil
}
