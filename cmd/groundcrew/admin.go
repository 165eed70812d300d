package main

// The local admin endpoint: while serve holds the store (bbolt allows one
// process), `groundcrew runs …` and `groundcrew audit …` read it through
// serve. serve listens on a unix socket (server.admin_socket, default the
// store path + ".sock", mode 0600: only the bot's user can connect) and
// answers read-only calls, one per store method the commands use, as JSON
// over HTTP. Nothing can be changed through it.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/groundcrew/groundcrew/incident"
	"github.com/groundcrew/groundcrew/internal/httpguard"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/store"
)

// storeReader is what the runs and audit commands read: the store itself
// or, while serve runs, the admin endpoint.
type storeReader interface {
	ListRuns(ctx context.Context, q runmodel.RunQuery) ([]*runmodel.Run, error)
	GetRun(ctx context.Context, id string) (*runmodel.Run, error)
	Journal(ctx context.Context, runID string) ([]runmodel.JournalEntry, error)
	AuditEntries(ctx context.Context, runID string) ([]runmodel.AuditEntry, error)
	AuditAfter(ctx context.Context, seq uint64, limit int) ([]runmodel.AuditEntry, error)
	VerifyAudit(ctx context.Context) (int, error)
	AuditHead(ctx context.Context) (runmodel.AuditHead, error)
	VerifyAuditHead(ctx context.Context, want runmodel.AuditHead) error
	GetIncident(ctx context.Context, id string) (*incident.Incident, error)
	Path() string
}

// adminRequest is one call: the method's arguments.
type adminRequest struct {
	Query runmodel.RunQuery  `json:"query,omitzero"`
	ID    string             `json:"id,omitempty"`
	Head  runmodel.AuditHead `json:"head,omitzero"`
}

// adminResponse carries a result or an error; NotFound keeps
// errors.Is(err, bot.ErrNotFound) true on the client side.
type adminResponse struct {
	Result   json.RawMessage `json:"result,omitempty"`
	N        int             `json:"n,omitempty"`
	Error    string          `json:"error,omitempty"`
	NotFound bool            `json:"not_found,omitempty"`
}

// maxAdminPage bounds the runs of one list_runs answer.
const maxAdminPage = 1000

// adminHandler serves the read-only calls on db. release, when set, is
// called after each page of a stream of runs (the bbolt store drops the
// file pages it read from serve's resident memory).
func adminHandler(db storeReader, release func() error) http.Handler {
	mux := http.NewServeMux()
	handle := func(name string, call func(ctx context.Context, q adminRequest) (any, int, error)) {
		mux.HandleFunc("POST /v1/"+name, func(w http.ResponseWriter, r *http.Request) {
			var q adminRequest
			if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&q); err != nil {
				http.Error(w, "bad request: "+err.Error(), http.StatusBadRequest)
				return
			}
			res, n, err := call(r.Context(), q)
			var out adminResponse
			out.N = n
			if err != nil {
				out.Error, out.NotFound = err.Error(), errors.Is(err, chatmodel.ErrNotFound)
			}
			if res != nil {
				out.Result, _ = json.Marshal(res)
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(out)
		})
	}
	handle("list_runs", func(ctx context.Context, q adminRequest) (any, int, error) {
		// One answer is one message held in memory: it is bounded (the
		// runs stream below has no bound).
		if q.Query.Limit <= 0 || q.Query.Limit > maxAdminPage {
			return nil, 0, fmt.Errorf("list_runs: a limit of 1 to %d runs is required (POST /v1/runs streams any number)", maxAdminPage)
		}
		rs, err := db.ListRuns(ctx, q.Query)
		return rs, 0, err
	})
	handle("get_run", func(ctx context.Context, q adminRequest) (any, int, error) {
		r, err := db.GetRun(ctx, q.ID)
		return r, 0, err
	})
	handle("get_incident", func(ctx context.Context, q adminRequest) (any, int, error) {
		in, err := db.GetIncident(ctx, q.ID)
		if errors.Is(err, incident.ErrNotFound) {
			err = fmt.Errorf("%w: %w", err, chatmodel.ErrNotFound)
		}
		return in, 0, err
	})
	handle("journal", func(ctx context.Context, q adminRequest) (any, int, error) {
		j, err := db.Journal(ctx, q.ID)
		return j, 0, err
	})
	handle("audit_entries", func(ctx context.Context, q adminRequest) (any, int, error) {
		es, err := db.AuditEntries(ctx, q.ID)
		return es, 0, err
	})
	handle("verify_audit", func(ctx context.Context, _ adminRequest) (any, int, error) {
		n, err := db.VerifyAudit(ctx)
		return nil, n, err
	})
	handle("audit_head", func(ctx context.Context, _ adminRequest) (any, int, error) {
		h, err := db.AuditHead(ctx)
		return h, 0, err
	})
	handle("verify_audit_head", func(ctx context.Context, q adminRequest) (any, int, error) {
		return nil, 0, db.VerifyAuditHead(ctx, q.Head)
	})
	// runs streams a listing as JSON lines (runLine), read from the store a
	// page at a time: serve's memory stays flat however many runs there are.
	mux.HandleFunc("POST /v1/runs", func(w http.ResponseWriter, r *http.Request) {
		var q adminRequest
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&q); err != nil {
			http.Error(w, "bad request: "+err.Error(), http.StatusBadRequest)
			return
		}
		rc := http.NewResponseController(w)
		flush := func() {
			if release != nil {
				_ = release()
			}
			_ = rc.Flush()
			// Each page has its own deadline: a long listing is not cut
			// off by the server's write timeout.
			_ = rc.SetWriteDeadline(time.Now().Add(time.Minute))
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		flush()
		writeRunLines(r.Context(), w, flush, db, q.Query)
	})
	// audit streams the whole audit log as JSON lines (auditLine), a page
	// at a time, as runs does.
	mux.HandleFunc("POST /v1/audit", func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		flush := func() {
			if release != nil {
				_ = release()
			}
			_ = rc.Flush()
			_ = rc.SetWriteDeadline(time.Now().Add(time.Minute))
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		flush()
		enc := json.NewEncoder(w)
		err := pageAudit(r.Context(), db, func(e runmodel.AuditEntry) error { return enc.Encode(auditLine{Entry: &e}) }, flush)
		end := auditLine{End: true}
		if err != nil {
			end = auditLine{Error: err.Error()}
		}
		_ = enc.Encode(end)
		flush()
	})
	mux.HandleFunc("GET /v1/path", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, db.Path()) })
	return mux
}

// serveAdmin listens on the admin socket until ctx ends. The socket is
// made 0600 before it accepts a connection; a stale socket file left by
// a killed serve is replaced (this process holds the store, so no other
// serve of this store can be using it).
func (a *app) serveAdmin(ctx context.Context, g *errgroup.Group) error {
	path := a.cfg.Server.AdminSocket
	if path == "" || path == "off" {
		return nil
	}
	if st, err := os.Lstat(path); err == nil {
		if st.Mode()&os.ModeSocket == 0 {
			return fmt.Errorf("server.admin_socket %s exists and is not a socket", path)
		}
		_ = os.Remove(path)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("server.admin_socket %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return fmt.Errorf("server.admin_socket %s: %w", path, err)
	}
	var release func() error
	if db, ok := a.db.(*store.DB); ok {
		release = db.ReleaseMemory
	}
	srv := httpguard.Server(adminHandler(a.db, release))
	a.log.Info("admin socket listening", "path", path)
	serveUntil(ctx, g, srv, ln, 5*time.Second) // Shutdown closes the listener, which removes the socket file
	return nil
}

// adminClient reads the store of a running serve through its admin socket.
type adminClient struct {
	socket string
	store  string // the store path, for messages
	http   *http.Client
}

func newAdminClient(socket, store string) *adminClient {
	// No overall timeout: a stream of runs lasts as long as the listing;
	// the answer must start within callTimeout.
	return &adminClient{socket: socket, store: store, http: &http.Client{
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", socket)
			},
			ResponseHeaderTimeout: callTimeout,
		},
	}}
}

var _ storeReader = (*adminClient)(nil)

// post sends one call and returns the answer, once its status is 200.
func (c *adminClient) post(ctx context.Context, method string, q adminRequest) (*http.Response, error) {
	body, err := json.Marshal(q)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://groundcrew/v1/"+method, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("the store %s is in use and its admin socket %s does not answer: %w", c.store, c.socket, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("admin socket %s: %s: %s", c.socket, resp.Status, bytes.TrimSpace(msg))
	}
	return resp, nil
}

// callTimeout bounds one call (audit verify walks the whole chain).
const callTimeout = 5 * time.Minute

func (c *adminClient) call(ctx context.Context, method string, q adminRequest, result any) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := c.post(ctx, method, q)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var out adminResponse
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return 0, fmt.Errorf("admin socket %s: %w", c.socket, err)
	}
	if result != nil && len(out.Result) > 0 {
		if err := json.Unmarshal(out.Result, result); err != nil {
			return 0, fmt.Errorf("admin socket %s: %w", c.socket, err)
		}
	}
	switch {
	case out.NotFound:
		return out.N, fmt.Errorf("%s: %w", out.Error, chatmodel.ErrNotFound)
	case out.Error != "":
		return out.N, errors.New(out.Error)
	}
	return out.N, nil
}

func (c *adminClient) ListRuns(ctx context.Context, q runmodel.RunQuery) ([]*runmodel.Run, error) {
	var rs []*runmodel.Run
	_, err := c.call(ctx, "list_runs", adminRequest{Query: q}, &rs)
	return rs, err
}

func (c *adminClient) GetRun(ctx context.Context, id string) (*runmodel.Run, error) {
	var r *runmodel.Run
	_, err := c.call(ctx, "get_run", adminRequest{ID: id}, &r)
	return r, err
}

// GetIncident implements storeReader; an unknown id is incident.ErrNotFound.
func (c *adminClient) GetIncident(ctx context.Context, id string) (*incident.Incident, error) {
	var in *incident.Incident
	_, err := c.call(ctx, "get_incident", adminRequest{ID: id}, &in)
	if errors.Is(err, chatmodel.ErrNotFound) {
		return nil, fmt.Errorf("incident %s: %w", id, incident.ErrNotFound)
	}
	return in, err
}

func (c *adminClient) Journal(ctx context.Context, runID string) ([]runmodel.JournalEntry, error) {
	var j []runmodel.JournalEntry
	_, err := c.call(ctx, "journal", adminRequest{ID: runID}, &j)
	return j, err
}

func (c *adminClient) AuditEntries(ctx context.Context, runID string) ([]runmodel.AuditEntry, error) {
	var es []runmodel.AuditEntry
	_, err := c.call(ctx, "audit_entries", adminRequest{ID: runID}, &es)
	return es, err
}

func (c *adminClient) VerifyAudit(ctx context.Context) (int, error) {
	return c.call(ctx, "verify_audit", adminRequest{}, nil)
}

func (c *adminClient) AuditHead(ctx context.Context) (runmodel.AuditHead, error) {
	var h runmodel.AuditHead
	_, err := c.call(ctx, "audit_head", adminRequest{}, &h)
	return h, err
}

func (c *adminClient) VerifyAuditHead(ctx context.Context, want runmodel.AuditHead) error {
	_, err := c.call(ctx, "verify_audit_head", adminRequest{Head: want}, nil)
	return err
}

func (c *adminClient) Path() string { return c.store }

// AuditAfter implements storeReader (one page; audit export streams
// instead, through eachAudit).
func (c *adminClient) AuditAfter(ctx context.Context, seq uint64, limit int) ([]runmodel.AuditEntry, error) {
	var es []runmodel.AuditEntry
	err := c.EachAudit(ctx, func(e runmodel.AuditEntry) error {
		if e.Seq > seq && len(es) < limit {
			es = append(es, e)
		}
		return nil
	})
	return es, err
}

// auditLine is one line of the admin socket's stream of the audit log.
type auditLine struct {
	Entry *runmodel.AuditEntry `json:"entry,omitempty"`
	End   bool                 `json:"end,omitempty"`
	Error string               `json:"error,omitempty"`
}

// auditPage is how many audit entries one read of the log takes.
const auditPage = 500

// pageAudit calls fn with every audit entry, in order, reading the log a
// page at a time; after each page it calls flushed (if set).
func pageAudit(ctx context.Context, db storeReader, fn func(runmodel.AuditEntry) error, flushed func()) error {
	var after uint64
	for {
		es, err := db.AuditAfter(ctx, after, auditPage)
		if err != nil {
			return err
		}
		for _, e := range es {
			if err := fn(e); err != nil {
				return err
			}
		}
		if flushed != nil {
			flushed()
		}
		if len(es) < auditPage {
			return nil
		}
		after = es[len(es)-1].Seq
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// eachAudit calls fn with every audit entry in order, streamed from a
// live serve or read a page at a time from the store.
func eachAudit(ctx context.Context, db storeReader, fn func(runmodel.AuditEntry) error) error {
	if c, ok := db.(*adminClient); ok {
		return c.EachAudit(ctx, fn)
	}
	return pageAudit(ctx, db, fn, nil)
}

// EachAudit reads the audit log from serve as a stream of JSON lines.
func (c *adminClient) EachAudit(ctx context.Context, fn func(runmodel.AuditEntry) error) error {
	resp, err := c.post(ctx, "audit", adminRequest{})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var l auditLine
		if err := dec.Decode(&l); err != nil {
			return fmt.Errorf("admin socket %s: the audit log ended early: %w", c.socket, err)
		}
		switch {
		case l.Error != "":
			return fmt.Errorf("reading the audit log: %s", l.Error)
		case l.End:
			return nil
		case l.Entry != nil:
			if err := fn(*l.Entry); err != nil {
				return err
			}
		}
	}
}
