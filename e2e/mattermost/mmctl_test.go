package e2e

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mattermost/mattermost/server/public/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/adapters/mattermost"
	"github.com/groundcrew/groundcrew/model/chatmodel"
)

// adapterReadme is the README whose mmctl commands TestReadmeMmctlCommands runs.
const adapterReadme = "../../adapters/mattermost/README.md"

// readmeURL is the server URL the README's commands use; the test puts the
// real server's in its place.
const readmeURL = "https://chat.example.com"

// readmeMmctlLines returns every line of a fenced code block of the README
// that starts with "mmctl ", without a trailing "# comment", in order.
func readmeMmctlLines(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(adapterReadme)
	require.NoError(t, err)
	var out []string
	fenced := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if !fenced || !strings.HasPrefix(line, "mmctl ") {
			continue
		}
		if i := strings.Index(line, " #"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		out = append(out, line)
	}
	require.NoError(t, sc.Err())
	return out
}

// mmctlRunner runs shell command lines with mmctl on the PATH and its
// credentials in a directory of its own.
type mmctlRunner struct {
	t   *testing.T
	env []string
}

func (r *mmctlRunner) run(line string) (stdout, stderr string, err error) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", line)
	cmd.Env = r.env
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	r.t.Logf("$ %s\n%s%s(exit: %v)", line, o.String(), e.String(), err)
	return o.String(), e.String(), err
}

// TestReadmeMmctlCommands runs every mmctl command of the adapter README,
// as written, with a real mmctl of the server's version against a real
// server, checks what each one prints and what it changed on the server,
// and fails when the README gains a command this test does not know, or
// loses one it does (so the README cannot drift).
func TestReadmeMmctlCommands(t *testing.T) {
	mmctl := mmctlPath(t)
	// A short socket path: unix sockets are limited to ~108 bytes.
	sockDir, err := os.MkdirTemp("", "gc-mm-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	sock := filepath.Join(sockDir, "mm.sock")
	srv := startServer(t,
		"MM_SERVICESETTINGS_ENABLELOCALMODE=true",
		"MM_SERVICESETTINGS_LOCALMODESOCKETLOCATION="+sock,
		// Left to the server's defaults, so the README's commands must set
		// what the bot needs.
		"MM_SERVICESETTINGS_ENABLEBOTACCOUNTCREATION",
		"MM_SERVICESETTINGS_ENABLEUSERACCESSTOKENS",
		"MM_SERVICESETTINGS_ALLOWEDUNTRUSTEDINTERNALCONNECTIONS",
	)
	w := bootstrapPeople(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	alice := w.Users["alice"]

	home := t.TempDir()
	pwFile := filepath.Join(home, "admin-password")
	require.NoError(t, os.WriteFile(pwFile, []byte(userPassword), 0o600))
	r := &mmctlRunner{t: t, env: []string{
		"PATH=" + filepath.Dir(mmctl) + ":" + os.Getenv("PATH"),
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"MMCTL_LOCAL_SOCKET_PATH=" + sock,
	}}

	var (
		botToken string
		botUser  *model.User
	)
	botClient := func() *model.Client4 {
		c := model.NewAPIv4Client(srv.URL)
		c.SetToken(botToken)
		return c
	}
	ephemeral := func() (*model.Response, error) {
		_, resp, err := botClient().CreatePostEphemeral(ctx, &model.PostEphemeral{
			UserID: alice.User.Id,
			Post:   &model.Post{ChannelId: w.Channel.Id, Message: "only for alice"},
		})
		return resp, err
	}

	// What each README command must print (stdout, whole, trimmed) and
	// change; before runs first.
	type expect struct {
		out    *regexp.Regexp
		before func()
		after  func(out string)
	}
	expects := map[string]expect{
		"mmctl auth login " + readmeURL + " --name prod --username admin": {
			out: regexp.MustCompile(`^credentials for "prod": "admin@` + regexp.QuoteMeta(srv.URL) + `" stored$`),
		},
		"mmctl config set ServiceSettings.EnableBotAccountCreation true": {
			out: regexp.MustCompile(`^Value changed successfully$`),
			before: func() {
				cfg, _, err := w.Admin.GetConfig(ctx)
				require.NoError(t, err)
				require.False(t, *cfg.ServiceSettings.EnableBotAccountCreation, "the server's default")
			},
			after: func(string) {
				cfg, _, err := w.Admin.GetConfig(ctx)
				require.NoError(t, err)
				assert.True(t, *cfg.ServiceSettings.EnableBotAccountCreation)
			},
		},
		"mmctl config set ServiceSettings.AllowedUntrustedInternalConnections groundcrew.internal": {
			out: regexp.MustCompile(`^Value changed successfully$`),
			after: func(string) {
				cfg, _, err := w.Admin.GetConfig(ctx)
				require.NoError(t, err)
				assert.Equal(t, "groundcrew.internal", *cfg.ServiceSettings.AllowedUntrustedInternalConnections)
			},
		},
		`mmctl bot create groundcrew --display-name groundcrew --description "Runbooks for Concourse"`: {
			out: regexp.MustCompile(`^Created bot [a-z0-9]{26}$`),
			after: func(out string) {
				var err error
				botUser, _, err = w.Admin.GetUserByUsername(ctx, "groundcrew", "")
				require.NoError(t, err)
				assert.True(t, botUser.IsBot)
				assert.Equal(t, "Created bot "+botUser.Id, out)
				b, _, err := w.Admin.GetBot(ctx, botUser.Id, "")
				require.NoError(t, err)
				assert.Equal(t, "Runbooks for Concourse", b.Description)
			},
		},
		"mmctl token generate groundcrew groundcrew": {
			out: regexp.MustCompile(`^[a-z0-9]{26}: groundcrew$`),
			after: func(out string) {
				botToken, _, _ = strings.Cut(out, ":")
				me, _, err := botClient().GetMe(ctx, "")
				require.NoError(t, err, "the printed token (before the colon) authenticates the bot, personal access tokens being off")
				assert.Equal(t, botUser.Id, me.Id)
			},
		},
		"mmctl team users add ops groundcrew": {
			out: regexp.MustCompile(`^$`),
			after: func(string) {
				_, _, err := w.Admin.GetTeamMember(ctx, w.Team.Id, botUser.Id, "")
				assert.NoError(t, err, "the bot is in team ops")
			},
		},
		"mmctl channel users add ops:ci-ops groundcrew": {
			out: regexp.MustCompile(`^$`),
			after: func(string) {
				_, _, err := botClient().CreatePost(ctx, &model.Post{ChannelId: w.Channel.Id, Message: "hello from the README's bot"})
				assert.NoError(t, err, "the bot can post in ci-ops")
			},
		},
		"mmctl team search ops --json": {
			after: func(out string) {
				assert.Contains(t, out, `"id": "`+w.Team.Id+`"`, "the team id for the schemeRoles call")
			},
		},
		"mmctl user search groundcrew --json": {
			after: func(out string) {
				assert.Contains(t, out, `"id": "`+botUser.Id+`"`, "the bot's user id for the schemeRoles call")
			},
		},
		"mmctl permissions add system_user create_post_ephemeral": {
			before: func() {
				resp, err := ephemeral()
				require.Error(t, err, "a plain bot may not post ephemeral messages")
				require.Equal(t, http.StatusForbidden, resp.StatusCode)
			},
			after: func(string) {
				_, err := ephemeral()
				assert.NoError(t, err, "with the permission on system_user, the bot posts ephemeral messages (no licence needed)")
				// And the adapter uses them: a refusal outside a command
				// reaches alice alone, no mention in the channel.
				aliceEph := listenEphemeral(t, srv.URL, alice)
				a, err := mattermost.New(mattermost.Config{URL: srv.URL, BotToken: secretOf(botToken), CommandToken: secretOf("unused"), Team: "ops"},
					mattermost.Options{Logger: testLogger(t)})
				require.NoError(t, err)
				runCtx, stop := context.WithCancel(ctx)
				defer stop()
				go func() { _ = a.Run(runCtx, newRecorder()) }()
				eventually(t, 30*time.Second, "the adapter connected", a.Connected)
				require.NoError(t, a.Ephemeral(ctx, chatmodel.Conversation{Channel: w.Channel.Id}, chatmodel.User{ID: alice.User.Id, Name: "alice"}, chatmodel.Message{Text: "Not counted: you started this run."}))
				p := aliceEph.waitFor(t, "you started this run", 10*time.Second)
				assert.Equal(t, botUser.Id, p.UserId)
				list, _, err := w.Admin.GetPostsForChannel(ctx, w.Channel.Id, 0, 20, "", false, false)
				require.NoError(t, err)
				for _, p := range list.Posts {
					assert.NotContains(t, p.Message, "you started this run", "no public fallback when the permission is granted")
				}
			},
		},
		"mmctl roles system-admin groundcrew": {
			out: regexp.MustCompile(`^System admin role assigned to user "groundcrew". Current roles are: .*system_admin`),
			after: func(string) {
				u, _, err := w.Admin.GetUser(ctx, botUser.Id, "")
				require.NoError(t, err)
				assert.Contains(t, strings.Fields(u.Roles), model.SystemAdminRoleId)
			},
		},
	}

	lines := readmeMmctlLines(t)
	for _, line := range lines {
		if _, ok := expects[line]; !ok {
			t.Errorf("the README runs %q, which this test does not check: add it to expects", line)
		}
	}
	for line := range expects {
		if !slices.Contains(lines, line) {
			t.Errorf("this test checks %q, which is no longer in the README: drop or update it", line)
		}
	}
	require.False(t, t.Failed())

	for _, line := range lines {
		e := expects[line]
		if e.before != nil {
			e.before()
		}
		run := line
		if strings.HasPrefix(line, "mmctl auth login ") {
			// Interactive in the README (it asks for the password).
			run = strings.Replace(line, readmeURL, srv.URL, 1) + " --password-file " + pwFile
		}
		stdout, _, err := r.run(run)
		require.NoError(t, err, "%s", line)
		out := strings.TrimSpace(stdout)
		if e.out != nil {
			assert.Regexp(t, e.out, out, "what %q prints", line)
		}
		if e.after != nil {
			e.after(out)
		}
	}

	// Local mode, as the README says: works without a login, but cannot
	// create bots.
	stdout, _, err := r.run("mmctl --local bot list")
	require.NoError(t, err)
	assert.Contains(t, stdout, "groundcrew")
	_, stderr, err := r.run("mmctl --local bot create another")
	assert.Error(t, err, "bot create is not available in local mode")
	t.Logf("mmctl --local bot create: %s", strings.TrimSpace(stderr))
}
