package concoursesim

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

var roleRank = map[string]int{RoleViewer: 1, RolePipelineOperator: 2, RoleMember: 3, RoleOwner: 4}

// access is who is calling, as the auth middleware sees it.
type access struct {
	user     *User
	hasToken bool // an Authorization header was sent
}

func (a access) authenticated() bool { return a.user != nil }
func (a access) admin() bool         { return a.user != nil && a.user.IsAdmin() }

// authorized reports whether the caller has at least role on team.
func (a access) authorized(team, role string) bool {
	if a.user == nil {
		return false
	}
	if a.user.IsAdmin() {
		return true
	}
	got, ok := a.user.Teams[team]
	return ok && roleRank[got] >= roleRank[role]
}

// teams lists the teams where the caller is at least a viewer.
func (a access) teams(st *state) []string {
	var out []string
	for t := range st.teams {
		if a.authorized(t, RoleViewer) {
			out = append(out, t)
		}
	}
	return out
}

// teamAuth is a team's auth config as GET /api/v1/teams presents it
// (atc.TeamAuth): for each role given to someone, the users that hold it
// as "<connector>:<user>" (local users here) and the groups (none in the
// simulator). Admins own main. Callers hold st.mu.
func (st *state) teamAuth(team string) map[string]map[string][]string {
	auth := map[string]map[string][]string{}
	for _, name := range slices.Sorted(maps.Keys(st.users)) {
		u := st.users[name]
		role, ok := u.Teams[team]
		if u.Admin && team == "main" {
			role, ok = RoleOwner, true
		}
		if !ok {
			continue
		}
		if auth[role] == nil {
			auth[role] = map[string][]string{"users": {}, "groups": {}}
		}
		auth[role]["users"] = append(auth[role]["users"], "local:"+u.Name)
	}
	return auth
}

// access resolves the bearer token. Callers hold st.mu.
func (st *state) access(r *http.Request, now time.Time) access {
	h := r.Header.Get("Authorization")
	if h == "" {
		return access{}
	}
	a := access{hasToken: true}
	parts := strings.Split(h, " ")
	if len(parts) != 2 || !strings.EqualFold(parts[0], "bearer") {
		return a
	}
	tok, ok := st.tokens[parts[1]]
	if !ok || now.After(tok.expires) {
		return a
	}
	if u, ok := st.users[tok.user]; ok {
		a.user = &u
	}
	return a
}

func (s *Server) userOf(r *http.Request) string {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	a := s.st.access(r, s.st.clock.Now())
	if a.user == nil {
		return ""
	}
	return a.user.Name
}

// handleToken is dex's password grant, as Concourse wraps it.
func (s *Server) handleToken(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "Could not parse the request body.")
		return
	}
	id, secret, ok := r.BasicAuth()
	if ok {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if id != "fly" || secret != "Zmx5" {
		oauthError(w, http.StatusUnauthorized, "invalid_client", "Invalid client credentials.")
		return
	}
	if gt := r.PostForm.Get("grant_type"); gt != "password" {
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type", "Unsupported grant type "+gt+".")
		return
	}
	if !strings.Contains(" "+r.PostForm.Get("scope")+" ", " openid ") {
		oauthError(w, http.StatusBadRequest, "invalid_request", `Missing required scope(s) ["openid"].`)
		return
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	u, ok := s.st.users[r.PostForm.Get("username")]
	if !ok || u.Password != r.PostForm.Get("password") {
		oauthError(w, http.StatusUnauthorized, "access_denied", "Invalid username or password")
		return
	}
	now := s.st.clock.Now()
	exp := now.Add(s.st.tokenTTL)
	tok := newToken(exp)
	s.st.tokens[tok] = token{user: u.Name, expires: exp}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token": tok, "token_type": "bearer",
		"expires_in": int64(s.st.tokenTTL / time.Second), "id_token": "sim.id.token",
	})
}

// newToken makes an opaque token like Concourse's: 20 random bytes and the
// little-endian expiry, base64 without padding (38 characters).
func newToken(exp time.Time) string {
	b := make([]byte, 28)
	_, _ = rand.Read(b[:20])
	binary.LittleEndian.PutUint64(b[20:], uint64(exp.Unix()))
	return base64.RawStdEncoding.EncodeToString(b)
}

func oauthError(w http.ResponseWriter, status int, code, desc string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": desc})
}

// ExpireTokens invalidates every issued token, as if they had expired:
// clients get 401 until they log in again.
func (s *Server) ExpireTokens() {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	s.st.tokens = map[string]token{}
}

// Token issues a token for a user directly (tests that skip the login).
func (s *Server) Token(user string) string {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	exp := s.st.clock.Now().Add(s.st.tokenTTL)
	tok := newToken(exp)
	s.st.tokens[tok] = token{user: user, expires: exp}
	return tok
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// text writes a plain-text body (the auth layer's 401/403 and http.Error).
func text(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

func notAuthorized(w http.ResponseWriter) { text(w, http.StatusUnauthorized, "not authorized") }
func forbidden(w http.ResponseWriter)     { text(w, http.StatusForbidden, "forbidden") }
func notFound(w http.ResponseWriter)      { w.WriteHeader(http.StatusNotFound) }

// denied answers 401 to anonymous or refused tokens and 403 otherwise.
func denied(w http.ResponseWriter, a access) {
	if !a.authenticated() {
		notAuthorized(w)
		return
	}
	forbidden(w)
}

// jsonAPINotFound is the JSON:API 404 of the cache endpoints.
func jsonAPINotFound(w http.ResponseWriter, title, detail string) {
	w.Header().Set("Content-Type", "application/vnd.api+json")
	w.WriteHeader(http.StatusNotFound)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"errors": []map[string]string{{"title": title, "detail": detail, "status": "404"}},
	})
}
