package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mattermost/mattermost/server/public/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/adapters/concourse/concoursesim"
)

// The simulated Concourse target: its vars make the built-in worker-stalled
// runbook address worker N as caascad-ci-workers-infra-infra-prd-N.
const (
	targetName   = "infra-prd"
	workerPrefix = "caascad-ci-workers-infra-infra-prd-"
)

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
	buildDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// groundcrewBinary builds cmd/groundcrew of this checkout once.
func groundcrewBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "groundcrew-e2e-bin-")
		if buildErr != nil {
			return
		}
		builtBin = filepath.Join(buildDir, "groundcrew")
		root, _ := filepath.Abs("../..")
		cmd := exec.Command("go", "build", "-o", builtBin, "./cmd/groundcrew")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/groundcrew: %v\n%s", err, out)
		}
	})
	require.NoError(t, buildErr)
	return builtBin
}

// requireBuiltins skips the test when the binary cannot load its built-in
// runbooks because operations they use are not registered (yet).
func requireBuiltins(t *testing.T, bin string) {
	t.Helper()
	out, err := exec.Command(bin, "lint").CombinedOutput()
	if err == nil {
		return
	}
	if strings.Contains(string(out), "unknown operation") {
		t.Skipf("cmd/groundcrew does not register the operations of its built-in runbooks yet:\n%s", out)
	}
	t.Fatalf("groundcrew lint (the built-in runbooks): %v\n%s", err, out)
}

// gcProcess is a running `groundcrew serve`.
type gcProcess struct {
	bin     string
	store   string
	cmd     *exec.Cmd
	logPath string
	exited  chan error
	url     string
}

// runs shows the runs in the store (after the process stopped), for
// failure messages.
func (p *gcProcess) runs() string {
	out, err := exec.Command(p.bin, "runs", "list", "--store", p.store).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("%v: %s", err, out)
	}
	var b strings.Builder
	b.Write(out)
	for _, line := range strings.Split(string(out), "\n")[1:] {
		if f := strings.Fields(line); len(f) > 0 {
			o, _ := exec.Command(p.bin, "runs", "show", f[0], "--format", "json", "--store", p.store).CombinedOutput()
			b.Write(o)
		}
	}
	return b.String()
}

func (p *gcProcess) logTail() string {
	b, _ := os.ReadFile(p.logPath)
	return tail(string(b), 40)
}

// defaultApprovals is the approval policy startGroundcrew configures.
const defaultApprovals = `approvals:
  default: {approvers: ["group:ci-oncall"], required: 1, expires: 30m}
`

// startGroundcrew writes a config for the world (target infra-prd on the
// simulator, approvers group:ci-oncall) and starts the binary. Create the
// group first (createOncall): serve refuses a policy naming a group the
// server does not have.
func startGroundcrew(t *testing.T, w *world, sim *concoursesim.Server) *gcProcess {
	t.Helper()
	cfgPath, listen := writeGroundcrewConfig(t, w, sim, defaultApprovals)
	return startGroundcrewWith(t, cfgPath, listen)
}

// writeGroundcrewConfig writes the config startGroundcrew uses with the
// given approvals section and returns its path and the address to listen on.
func writeGroundcrewConfig(t *testing.T, w *world, sim *concoursesim.Server, approvals string) (cfgPath, listen string) {
	t.Helper()
	dir := t.TempDir()
	port := freePort(t)
	listen = fmt.Sprintf("127.0.0.1:%d", port)
	cfg := mattermostConfig(w, dir, listen, sim.URL(), sim.TSAAddr()) + `    vars: {target: infra, zone: infra-prd}
    workers:
      name: "caascad-ci-workers-{{.vars.target}}-{{.vars.zone}}-{{.id}}"
      host: "{{.name}}.{{.vars.zone}}.caascad.com"
      jump: 'ssh -t "cloud@bst.{{.vars.zone}}.caascad.com"'
`
	cfgPath = filepath.Join(dir, "groundcrew.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(cfg+approvals), 0o600))
	return cfgPath, listen
}

// mattermostConfig is the start of a groundcrew config in the e2e world:
// the store in dir, the address to listen on, the bot on Mattermost (team
// ops, signed actions, the slash command registered) and the target at
// url/tsa with groundcrew's account. More of the target's keys may follow
// (indented by 4), then the config's other sections.
func mattermostConfig(w *world, dir, listen, url, tsa string) string {
	return fmt.Sprintf(`store: %s
server: {listen: "%s"}
log: {level: debug}
chat:
  platform: mattermost
  mattermost:
    url: %s
    bot_token: %s
    action_hmac_key: e2e-action-key-0123456789abcdef
    team: ops
    callback_url: http://%s
    register_command: true
targets:
  %s:
    url: %s
    tsa: %s
    team: main
    username: groundcrew
    password: groundcrew-pass
`, filepath.Join(dir, "groundcrew.db"), listen, w.Server.URL, w.BotToken, listen, targetName, url, tsa)
}

// startGroundcrewWith starts `groundcrew serve` on a config written by
// writeGroundcrewConfig and waits until it answers /healthz.
func startGroundcrewWith(t *testing.T, cfgPath, listen string) *gcProcess {
	t.Helper()
	bin := groundcrewBinary(t)
	dir := filepath.Dir(cfgPath)
	p := &gcProcess{logPath: filepath.Join(dir, "groundcrew.log"), exited: make(chan error, 1), url: "http://" + listen, bin: bin, store: filepath.Join(dir, "groundcrew.db")}
	logFile, err := os.Create(p.logPath)
	require.NoError(t, err)
	p.cmd = exec.Command(bin, "serve", "--config", cfgPath)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, p.cmd.Start())
	go func() { p.exited <- p.cmd.Wait(); logFile.Close() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(15 * time.Second):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.exited
		}
		if t.Failed() {
			t.Logf("--- groundcrew log (last lines) ---\n%s", p.logTail())
			t.Logf("--- groundcrew runs ---\n%s", p.runs())
		}
	})

	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-p.exited:
			p.exited <- err // for the cleanup, which waits for the exit
			t.Fatalf("groundcrew serve exited at start: %v\n%s", err, p.logTail())
		default:
		}
		if resp, err := http.Get(p.url + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("groundcrew did not answer /healthz within 30s\n%s", p.logTail())
	return nil
}

// eventually polls fn until it returns true, failing with what after timeout.
// The optional show is called on failure to print the state.
func eventually(t *testing.T, timeout time.Duration, what string, fn func() bool, show ...func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if fn() {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	var state string
	for _, s := range show {
		state += "\n" + s()
	}
	t.Fatalf("timed out after %s waiting for %s%s", timeout, what, state)
}

// findRunRoot waits for the bot's root post of a new run of runbook whose
// thread mentions text.
func findRunRoot(ctx context.Context, t *testing.T, w *world, u *mmUser, since time.Time, runbook, text string) *model.Post {
	t.Helper()
	var root *model.Post
	eventually(t, 30*time.Second, "the root message of the "+runbook+" run", func() bool {
		list, _, err := u.GetPostsForChannel(ctx, w.Channel.Id, 0, 30, "", false, false)
		require.NoError(t, err)
		for _, id := range list.Order {
			p := list.Posts[id]
			if p.UserId == w.BotUser.Id && p.RootId == "" && p.CreateAt >= since.UnixMilli() && strings.Contains(p.Message, "**"+runbook+"**") {
				posts, err := threadPosts(ctx, u.Client4, p.Id)
				require.NoError(t, err)
				for _, r := range posts {
					if strings.Contains(r.Message, text) || strings.Contains(attachmentText(r), text) {
						root = p
						return true
					}
				}
			}
		}
		return false
	})
	return root
}

func attachmentText(p *model.Post) string {
	var b strings.Builder
	for _, a := range p.Attachments() {
		b.WriteString(a.Text)
		b.WriteString("\n")
	}
	return b.String()
}

// findGate waits until the run waits for approval (as its root message
// says) and returns the gate message (the post with an Approve button).
func findGate(ctx context.Context, t *testing.T, u *mmUser, rootID string) *model.Post {
	t.Helper()
	waitRoot(ctx, t, u, rootID, "waiting for approval")
	var gate *model.Post
	eventually(t, 30*time.Second, "the approval gate in the thread", func() bool {
		posts, err := threadPosts(ctx, u.Client4, rootID)
		require.NoError(t, err)
		for _, p := range posts {
			for _, a := range p.Attachments() {
				for _, act := range a.Actions {
					if act.Name == "Approve" {
						gate = p
						return true
					}
				}
			}
		}
		return false
	})
	return gate
}

// threadText is the whole thread as text, for assertions and failures.
func threadText(ctx context.Context, t *testing.T, u *mmUser, rootID string) string {
	t.Helper()
	posts, err := threadPosts(ctx, u.Client4, rootID)
	require.NoError(t, err)
	var b strings.Builder
	for _, p := range posts {
		fmt.Fprintf(&b, "[%s] %s\n%s", p.UserId[:6], p.Message, attachmentText(p))
	}
	return b.String()
}

// createOncall creates the private channel ci-oncall (the approver group
// "group:ci-oncall") with the given users and the bot.
func createOncall(ctx context.Context, t *testing.T, w *world, users ...*mmUser) {
	t.Helper()
	oncall, _, err := w.Admin.CreateChannel(ctx, &model.Channel{TeamId: w.Team.Id, Name: "ci-oncall", DisplayName: "CI on-call", Type: model.ChannelTypePrivate})
	require.NoError(t, err)
	ids := []string{w.BotUser.Id}
	for _, u := range users {
		ids = append(ids, u.User.Id)
	}
	for _, id := range ids {
		_, _, err = w.Admin.AddChannelMember(ctx, oncall.Id, id)
		require.NoError(t, err)
	}
}

// waitRoot waits until the run's root message contains text.
func waitRoot(ctx context.Context, t *testing.T, u *mmUser, rootID, text string) {
	t.Helper()
	eventually(t, 30*time.Second, "the run's root message to say "+text, func() bool {
		p, _, err := u.GetPost(ctx, rootID, "")
		require.NoError(t, err)
		return strings.Contains(p.Message, text)
	}, func() string { return threadText(ctx, t, u, rootID) })
}

// waitPruned waits until worker is gone from the simulator, failing at once
// (with the thread) if the run failed.
func waitPruned(ctx context.Context, t *testing.T, sim *concoursesim.Server, u *mmUser, rootID, worker string) {
	t.Helper()
	eventually(t, 60*time.Second, "the worker to be pruned on the simulator", func() bool {
		if _, ok := sim.Worker(worker); !ok {
			return true
		}
		p, _, err := u.GetPost(ctx, rootID, "")
		require.NoError(t, err)
		if strings.Contains(p.Message, "failed") {
			t.Fatalf("the run failed instead of pruning %s:\n%s", worker, threadText(ctx, t, u, rootID))
		}
		return false
	}, func() string { return threadText(ctx, t, u, rootID) })
}

// e2eSim starts a Concourse simulator like infra-prd in the manual: four
// workers, 0 and 1 stalled, a TSA listener, and a Concourse admin for
// groundcrew (workers are global: pruning them needs an admin).
func e2eSim(t *testing.T) *concoursesim.Server {
	t.Helper()
	world := concoursesim.NewWorld().
		AddUser("groundcrew", "groundcrew-pass", map[string]string{"main": concoursesim.RoleOwner}).
		RunningWorkers(strings.TrimSuffix(workerPrefix, "-"), 4).
		StalledWorker(workerPrefix + "0").
		StalledWorker(workerPrefix + "1").
		StalledWorker(workerPrefix + "2")
	for i := range world.Users {
		if world.Users[i].Name == "groundcrew" {
			world.Users[i].Admin = true
		}
	}
	sim, err := concoursesim.New(*world, concoursesim.WithTSA())
	require.NoError(t, err)
	t.Cleanup(sim.Close)
	return sim
}

// findManual waits until the run waits for a person on the manual step
// whose title contains title, and returns its message.
func findManual(ctx context.Context, t *testing.T, u *mmUser, rootID, title string) *model.Post {
	t.Helper()
	var step *model.Post
	eventually(t, 30*time.Second, "the manual step "+title, func() bool {
		root, _, err := u.GetPost(ctx, rootID, "")
		require.NoError(t, err)
		if !strings.Contains(root.Message, "waiting for a person") || !strings.Contains(root.Message, title) {
			return false
		}
		posts, err := threadPosts(ctx, u.Client4, rootID)
		require.NoError(t, err)
		for _, p := range posts {
			if p.Id != rootID && strings.Contains(p.Message, "✋") && strings.Contains(p.Message, title) {
				step = p
				return true
			}
		}
		return false
	}, func() string { return threadText(ctx, t, u, rootID) })
	return step
}

func react(ctx context.Context, t *testing.T, u *mmUser, postID, emoji string) {
	t.Helper()
	_, _, err := u.SaveReaction(ctx, &model.Reaction{UserId: u.User.Id, PostId: postID, EmojiName: emoji})
	require.NoError(t, err, "%s reacting :%s:", u.User.Username, emoji)
}

// TestGroundcrewWorkerStalled runs the real `groundcrew serve` (Mattermost
// adapter) against a real Mattermost and a Concourse simulator, through the
// built-in worker-stalled runbook: the on-call engineers work through the
// manual steps (the worker cannot be reached, the VM restart and the
// rebuild are skipped), the requester's own approval of the prune is
// refused, another engineer approves, and the worker is pruned. Once with
// reactions, once with buttons.
func TestGroundcrewWorkerStalled(t *testing.T) {
	requireBuiltins(t, groundcrewBinary(t))
	srv := startServer(t)
	w := bootstrap(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	alice, carol, dave := w.Users["alice"], w.Users["carol"], w.Users["dave"]

	// Approvers: the private channel ci-oncall (alice is on call too, so her
	// refusal is about separation of duties, not membership).
	createOncall(ctx, t, w, alice, carol, dave)
	sim := e2eSim(t)
	startGroundcrew(t, w, sim)
	waitCommand(ctx, t, w)

	t.Run("by reaction", func(t *testing.T) {
		worker, since := workerPrefix+"0", time.Now()
		resp, err := alice.runCommand(ctx, w.Channel.Id, "", "/runbook run worker-stalled target="+targetName+" worker=0")
		require.NoError(t, err)
		t.Logf("command answer: %q", resp.Text)
		root := findRunRoot(ctx, t, w, carol, since, "worker-stalled", worker)
		assert.Contains(t, root.Message, "@alice", "the root names the requester")

		react(ctx, t, carol, findManual(ctx, t, carol, root.Id, "Connect to "+worker).Id, "x")
		react(ctx, t, carol, findManual(ctx, t, carol, root.Id, "Restart the VM of "+worker).Id, "next_track_button")
		react(ctx, t, carol, findManual(ctx, t, carol, root.Id, "Rebuild "+worker).Id, "next_track_button")
		gate := findGate(ctx, t, carol, root.Id)
		assert.Contains(t, gate.Message+attachmentText(gate), worker, "the gate shows what will be pruned")

		// The requester approves her own run: refused, and told why.
		react(ctx, t, alice, gate.Id, "white_check_mark")
		eventually(t, 20*time.Second, "the refusal of alice's approval in the thread", func() bool {
			txt := threadText(ctx, t, carol, root.Id)
			return strings.Contains(txt, "@alice") && strings.Contains(txt, "not counted")
		}, func() string { return threadText(ctx, t, carol, root.Id) })
		_, stillThere := sim.Worker(worker)
		assert.True(t, stillThere, "nothing pruned on a refused approval")

		// Another on-call engineer approves: the worker is pruned.
		react(ctx, t, carol, gate.Id, "white_check_mark")
		waitPruned(ctx, t, sim, carol, root.Id, worker)
		waitRoot(ctx, t, carol, root.Id, "succeeded")
		eventually(t, 30*time.Second, "the run summary in the thread", func() bool {
			return strings.Contains(threadText(ctx, t, carol, root.Id), "`/runbook summary r-")
		}, func() string { return threadText(ctx, t, carol, root.Id) })
		txt := threadText(ctx, t, carol, root.Id)
		t.Logf("the thread:\n%s", txt)
		assert.Contains(t, txt, "approved by @carol", "the thread says who approved")
		assert.Contains(t, txt, "pruned 1 worker", "the thread shows the result")
		_, other := sim.Worker(workerPrefix + "1")
		assert.True(t, other, "only the planned worker was pruned")
	})

	t.Run("by button", func(t *testing.T) {
		worker, since := workerPrefix+"1", time.Now()
		_, err := alice.runCommand(ctx, w.Channel.Id, "", "/runbook run worker-stalled target="+targetName+" worker=1")
		require.NoError(t, err)
		root := findRunRoot(ctx, t, w, carol, since, "worker-stalled", worker)
		clickAs(ctx, t, carol, findManual(ctx, t, carol, root.Id, "Connect to "+worker).Id, "Failed")
		clickAs(ctx, t, carol, findManual(ctx, t, carol, root.Id, "Restart the VM of "+worker).Id, "Skip")
		clickAs(ctx, t, carol, findManual(ctx, t, carol, root.Id, "Rebuild "+worker).Id, "Skip")
		gate := findGate(ctx, t, carol, root.Id)

		// alice presses Approve: refused, as an ephemeral answer to her click.
		aliceEph := listenEphemeral(t, srv.URL, alice)
		clickAs(ctx, t, alice, gate.Id, "Approve")
		aliceEph.waitFor(t, "not counted", 20*time.Second)
		_, stillThere := sim.Worker(worker)
		assert.True(t, stillThere)

		clickAs(ctx, t, dave, gate.Id, "Approve")
		waitPruned(ctx, t, sim, carol, root.Id, worker)
		waitRoot(ctx, t, carol, root.Id, "succeeded")
		p, _, err := carol.GetPost(ctx, gate.Id, "")
		require.NoError(t, err)
		assert.Contains(t, p.Message, "@dave", "the gate message, edited in place, names the approver")
		assert.Empty(t, p.Attachments(), "no buttons left on a decided gate")
		eventually(t, 30*time.Second, "the run summary in the thread", func() bool {
			return strings.Contains(threadText(ctx, t, carol, root.Id), "`/runbook summary r-")
		})
	})

	// #19.4: dave presses Approve the instant the gate's buttons appear
	// (on the WebSocket event, before groundcrew's post has returned): the
	// click counts.
	t.Run("a click the instant the gate appears", func(t *testing.T) {
		worker, since := workerPrefix+"2", time.Now()
		clicked := clickOnAppearance(ctx, t, srv.URL, dave, "Approve")
		_, err := alice.runCommand(ctx, w.Channel.Id, "", "/runbook run worker-stalled target="+targetName+" worker=2")
		require.NoError(t, err)
		root := findRunRoot(ctx, t, w, carol, since, "worker-stalled", worker)
		clickAs(ctx, t, carol, findManual(ctx, t, carol, root.Id, "Connect to "+worker).Id, "Failed")
		clickAs(ctx, t, carol, findManual(ctx, t, carol, root.Id, "Restart the VM of "+worker).Id, "Skip")
		clickAs(ctx, t, carol, findManual(ctx, t, carol, root.Id, "Rebuild "+worker).Id, "Skip")
		select {
		case err := <-clicked:
			require.NoError(t, err, "dave's instant click")
		case <-time.After(60 * time.Second):
			t.Fatal("the gate's buttons never appeared")
		}
		waitPruned(ctx, t, sim, carol, root.Id, worker)
		txt := threadText(ctx, t, carol, root.Id)
		assert.NotContains(t, txt, "was replaced", "the instant click was matched to its gate")
	})
}

// clickOnAppearance presses the button labelled label as u on the first
// post whose buttons appear on u's WebSocket (posted or edited), at once.
func clickOnAppearance(ctx context.Context, t *testing.T, serverURL string, u *mmUser, label string) <-chan error {
	t.Helper()
	ws, err := model.NewWebSocketClient4("ws"+strings.TrimPrefix(serverURL, "http"), u.AuthToken)
	require.NoError(t, err)
	ws.Listen()
	t.Cleanup(ws.Close)
	out := make(chan error, 1)
	go func() {
		for range ws.ResponseChannel {
		}
	}()
	go func() {
		done := false
		for ev := range ws.EventChannel {
			if done || (ev.EventType() != model.WebsocketEventPosted && ev.EventType() != model.WebsocketEventPostEdited) {
				continue
			}
			raw, _ := ev.GetData()["post"].(string)
			var p model.Post
			if json.Unmarshal([]byte(raw), &p) != nil {
				continue
			}
			for _, att := range p.Attachments() {
				for _, act := range att.Actions {
					if act.Name == label && !done {
						done = true
						_, err := u.DoPostActionWithCookie(ctx, p.Id, act.Id, "", act.Cookie)
						out <- err
					}
				}
			}
		}
	}()
	return out
}
