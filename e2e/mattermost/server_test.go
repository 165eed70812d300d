package e2e

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// MattermostVersion is the server version the tests build and run.
const MattermostVersion = "11.1.0"

// Environment variables the harness reads.
const (
	// EnvBinary points at a prebuilt mattermost binary (skips the build).
	EnvBinary = "GROUNDCREW_E2E_MATTERMOST_BINARY"
	// EnvPostgres is the admin DSN of the PostgreSQL server used for the
	// test database (default postgres://postgres@127.0.0.1:5432/postgres).
	EnvPostgres = "GROUNDCREW_E2E_POSTGRES"
	// EnvMmctl points at a prebuilt mmctl binary (skips the build).
	EnvMmctl = "GROUNDCREW_E2E_MMCTL"
)

// mmServer is a Mattermost server process started for a test.
type mmServer struct {
	URL     string
	dir     string
	logPath string
	cmd     *exec.Cmd
	exited  chan error
}

// binaryPath returns the cached server binary, building it if missing.
func binaryPath(tb testing.TB) string {
	tb.Helper()
	return cachedBinary(tb, EnvBinary, "mattermost", "github.com/mattermost/mattermost/server/v8/cmd/mattermost")
}

// mmctlPath returns the cached mmctl binary (Mattermost's admin CLI, same
// version as the server), building it if missing.
func mmctlPath(tb testing.TB) string {
	tb.Helper()
	return cachedBinary(tb, EnvMmctl, "mmctl", "github.com/mattermost/mattermost/server/v8/cmd/mmctl")
}

// cachedBinary returns $env, or the binary name cached for this Mattermost
// version, building pkg from the module in ./server when it is missing.
func cachedBinary(tb testing.TB, env, name, pkg string) string {
	tb.Helper()
	if p := os.Getenv(env); p != "" {
		return p
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		tb.Fatalf("no cache directory for %s (set %s): %v", name, env, err)
	}
	bin := filepath.Join(cache, "groundcrew", "mattermost-"+MattermostVersion, name)
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	tb.Logf("building %s %s into %s (minutes the first time)…", name, MattermostVersion, bin)
	wd, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		tb.Fatal(err)
	}
	tmp := bin + ".tmp"
	cmd := exec.Command("go", "build", "-o", tmp, pkg)
	cmd.Dir = filepath.Join(wd, "server")
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("building %s failed (see e2e/mattermost/server/go.mod): %v\n%s", name, err, tail(string(out), 40))
	}
	if err := os.Rename(tmp, bin); err != nil {
		tb.Fatal(err)
	}
	return bin
}

// freshDatabase creates a role and a database for one server and returns
// its DSN; both are dropped when the test ends.
func freshDatabase(tb testing.TB) string {
	tb.Helper()
	admin := os.Getenv(EnvPostgres)
	if admin == "" {
		admin = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		tb.Fatalf("PostgreSQL is not reachable at %s (start it, or set %s): %v", redactDSN(admin), EnvPostgres, err)
	}
	defer conn.Close(context.Background())
	name := "gc_e2e_" + randomHex(6)
	for _, q := range []string{
		fmt.Sprintf(`CREATE ROLE %s LOGIN PASSWORD 'mmpass'`, name),
		fmt.Sprintf(`CREATE DATABASE %s OWNER %s`, name, name),
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			tb.Fatalf("preparing the test database: %s: %v", q, err)
		}
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			tb.Errorf("dropping test database %s: %v", name, err)
			return
		}
		defer conn.Close(context.Background())
		for _, q := range []string{
			fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, name),
			fmt.Sprintf(`DROP ROLE IF EXISTS %s`, name),
		} {
			if _, err := conn.Exec(ctx, q); err != nil {
				tb.Errorf("cleaning up: %s: %v", q, err)
			}
		}
	})
	host := "127.0.0.1:5432"
	if cfg, err := pgx.ParseConfig(admin); err == nil {
		host = fmt.Sprintf("%s:%d", cfg.Host, cfg.Port)
	}
	return fmt.Sprintf("postgres://%s:mmpass@%s/%s?sslmode=disable&connect_timeout=10", name, host, name)
}

// startServer starts Mattermost on a free loopback port with a fresh
// database and stops it (by PID) when the test ends. env adds or overrides
// MM_* settings ("MM_RATELIMITSETTINGS_ENABLE=true"; the last value of a
// variable wins); a bare name ("MM_SERVICESETTINGS_ENABLECOMMANDS") removes
// the harness's setting, leaving the server's default or config.json.
func startServer(tb testing.TB, env ...string) *mmServer {
	tb.Helper()
	bin := binaryPath(tb)
	dsn := freshDatabase(tb)
	port := freePort(tb)
	dir := tb.TempDir()
	s := &mmServer{
		URL:     fmt.Sprintf("http://127.0.0.1:%d", port),
		dir:     dir,
		logPath: filepath.Join(dir, "mattermost.log"),
		exited:  make(chan error, 1),
	}
	// The module proxy serves the server without its web app: a stand-in
	// page makes GET / answer 200 as on a real install (mmctl auth login
	// checks it).
	if err := os.MkdirAll(filepath.Join(dir, "client"), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "client", "root.html"), []byte("<!doctype html><title>Mattermost</title>\n"), 0o644); err != nil {
		tb.Fatal(err)
	}
	logFile, err := os.Create(s.logPath)
	if err != nil {
		tb.Fatal(err)
	}
	s.cmd = exec.Command(bin, "server", "-c", filepath.Join(dir, "config.json"))
	s.cmd.Dir = dir
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	s.cmd.Env = append(os.Environ(),
		"MM_SQLSETTINGS_DRIVERNAME=postgres",
		"MM_SQLSETTINGS_DATASOURCE="+dsn,
		"MM_SERVICESETTINGS_SITEURL="+s.URL,
		fmt.Sprintf("MM_SERVICESETTINGS_LISTENADDRESS=127.0.0.1:%d", port),
		"MM_SERVICESETTINGS_ENABLEBOTACCOUNTCREATION=true",
		"MM_SERVICESETTINGS_ENABLEUSERACCESSTOKENS=true",
		"MM_SERVICESETTINGS_ENABLECOMMANDS=true",
		"MM_SERVICESETTINGS_ALLOWEDUNTRUSTEDINTERNALCONNECTIONS=127.0.0.1 localhost",
		"MM_SERVICESETTINGS_ENABLESECURITYFIXALERT=false",
		"MM_SERVICESETTINGS_ENABLELOCALMODE=false",
		"MM_TEAMSETTINGS_ENABLEOPENSERVER=true",
		"MM_EMAILSETTINGS_SENDEMAILNOTIFICATIONS=false",
		"MM_PLUGINSETTINGS_ENABLE=false",
		"MM_PLUGINSETTINGS_ENABLEMARKETPLACE=false",
		"MM_PLUGINSETTINGS_AUTOMATICPREPACKAGEDPLUGINS=false",
		"MM_ANNOUNCEMENTSETTINGS_ADMINNOTICESENABLED=false",
		"MM_ANNOUNCEMENTSETTINGS_USERNOTICESENABLED=false",
		"MM_LOGSETTINGS_ENABLEDIAGNOSTICS=false",
		"MM_LOGSETTINGS_ENABLEFILE=false",
		"MM_LOGSETTINGS_CONSOLELEVEL=ERROR",
		"MM_FILESETTINGS_DIRECTORY="+filepath.Join(dir, "data")+"/",
	)
	for _, e := range env {
		if strings.Contains(e, "=") {
			s.cmd.Env = append(s.cmd.Env, e)
			continue
		}
		s.cmd.Env = slices.DeleteFunc(s.cmd.Env, func(v string) bool { return strings.HasPrefix(v, e+"=") })
	}
	if err := s.cmd.Start(); err != nil {
		tb.Fatalf("starting %s: %v", bin, err)
	}
	go func() { s.exited <- s.cmd.Wait(); logFile.Close() }()
	tb.Cleanup(func() { s.stop(tb) })

	if err := s.waitReady(120 * time.Second); err != nil {
		tb.Fatalf("the mattermost server did not start: %v\n--- last lines of %s ---\n%s", err, s.logPath, s.logTail(30))
	}
	return s
}

func (s *mmServer) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: 2 * time.Second}
	for time.Now().Before(deadline) {
		select {
		case err := <-s.exited:
			s.exited <- err
			return fmt.Errorf("the process exited early: %v", err)
		default:
		}
		resp, err := client.Get(s.URL + "/api/v4/system/ping")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(300 * time.Millisecond)
	}
	return fmt.Errorf("no answer from %s/api/v4/system/ping within %s", s.URL, timeout)
}

// stop ends the server by its PID: SIGTERM, then SIGKILL after 20 s.
func (s *mmServer) stop(tb testing.TB) {
	select {
	case err := <-s.exited:
		s.exited <- err
		return
	default:
	}
	pgid := s.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(20 * time.Second):
		tb.Logf("mattermost (pid %d) did not stop on SIGTERM; killing it", pgid)
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-s.exited
	}
}

func (s *mmServer) logTail(n int) string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return err.Error()
	}
	return tail(string(b), n)
}

func tail(s string, n int) string {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func freePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

func redactDSN(dsn string) string {
	if cfg, err := pgx.ParseConfig(dsn); err == nil && cfg.Password != "" {
		return strings.Replace(dsn, cfg.Password, "****", 1)
	}
	return dsn
}
