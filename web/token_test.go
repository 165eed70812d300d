package web_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/web"
)

func TestToken_SignedVerifiesUntilItsExpiry(t *testing.T) {
	s, err := web.NewSigner([]byte(testKey))
	require.NoError(t, err)
	exp := t0.Add(7 * 24 * time.Hour)
	tok := s.Sign(web.RunScope("r-7f3a9k2m0q"), exp)
	assert.Regexp(t, `^[0-9a-z]+-[a-z2-7]{26}$`, tok, "only characters every chat leaves alone in a link")
	got, err := s.Verify(web.RunScope("R-7F3A9K2M0Q"), tok, t0)
	require.NoError(t, err, "run ids are taken in any case")
	assert.True(t, got.Equal(exp))
	_, err = s.Verify(web.RunScope("r-7f3a9k2m0q"), tok, exp)
	assert.ErrorIs(t, err, web.ErrTokenExpired)
	_, err = s.Verify(web.RunScope("r-other"), tok, t0)
	assert.ErrorIs(t, err, web.ErrTokenInvalid)
	_, err = s.Verify(web.IncidentScope("r-7f3a9k2m0q"), tok, t0)
	assert.ErrorIs(t, err, web.ErrTokenInvalid, "a run's token does not open an incident of the same name")
	// a later expiry written into the token breaks its MAC
	e, mac, _ := strings.Cut(tok, "-")
	later := s.Sign("x", exp.Add(365*24*time.Hour))
	le, _, _ := strings.Cut(later, "-")
	_, err = s.Verify(web.RunScope("r-7f3a9k2m0q"), le+"-"+mac, t0)
	assert.ErrorIs(t, err, web.ErrTokenInvalid)
	_, err = s.Verify(web.RunScope("r-7f3a9k2m0q"), "0"+e+"-"+mac, t0)
	assert.ErrorIs(t, err, web.ErrTokenInvalid, "one token per expiry: no leading zeros")
	_, err = web.NewSigner([]byte("short"))
	assert.ErrorContains(t, err, "at least 16")
}

func TestToken_APreviousKeyVerifiesButDoesNotSign(t *testing.T) {
	old, _ := web.NewSigner([]byte(testKey))
	s, err := web.NewSigner([]byte("the new key, rotated in 2026-12!"), []byte(testKey))
	require.NoError(t, err)
	exp := t0.Add(time.Hour)
	_, err = s.Verify(web.RunScope("r-1"), old.Sign(web.RunScope("r-1"), exp), t0)
	assert.NoError(t, err, "a link of the previous key opens")
	_, err = s.Verify(web.RunScope("r-2"), old.Sign(web.RunScope("r-1"), exp), t0)
	assert.ErrorIs(t, err, web.ErrTokenInvalid, "for its own page only")
	_, err = s.Verify(web.RunScope("r-1"), old.Sign(web.RunScope("r-1"), t0), t0)
	assert.ErrorIs(t, err, web.ErrTokenExpired)
	_, err = old.Verify(web.RunScope("r-1"), s.Sign(web.RunScope("r-1"), exp), t0)
	assert.ErrorIs(t, err, web.ErrTokenInvalid, "new links are signed with the new key")
	_, err = web.NewSigner([]byte(testKey), []byte("short"))
	assert.ErrorContains(t, err, "previous link key has 5 bytes")
	same, err := web.NewSigner([]byte(testKey), []byte(testKey))
	require.NoError(t, err)
	assert.Equal(t, 0, same.Previous())
}

func TestLinks_StayTheSameAtEveryEditAndLiveLongEnough(t *testing.T) {
	now := t0
	s, _ := web.NewSigner([]byte(testKey))
	l := web.NewLinks("https://gc.example.com/", s, 7*24*time.Hour, func() time.Time { return now })
	a := l.Run("r-7F3A9K2M0Q", t0)
	assert.True(t, strings.HasPrefix(a, "https://gc.example.com/runs/r-7f3a9k2m0q?t="), a)
	now = t0.Add(2 * time.Hour)
	assert.Equal(t, a, l.Run("r-7f3a9k2m0q", t0), "the root's link does not change at each edit")
	now = t0.Add(6 * 24 * time.Hour)
	b := l.Run("r-7f3a9k2m0q", t0)
	assert.NotEqual(t, a, b, "a link asked for late lives at least half a TTL")
	exp, _, err := web.ParseToken(b[strings.Index(b, "t=")+2:])
	require.NoError(t, err)
	assert.True(t, exp.Equal(t0.Add(14*24*time.Hour)), exp)
	unsigned := web.NewLinks("https://gc.example.com", nil, 0, nil)
	assert.Equal(t, "https://gc.example.com/incidents/i-3f2a9c", unsigned.Incident("i-3F2A9C", t0))
	assert.Empty(t, web.NewLinks("", s, 0, nil).Run("r-1", t0), "no address, no link")
}

func FuzzParseToken(f *testing.F) {
	s, _ := web.NewSigner([]byte(testKey))
	f.Add(s.Sign(web.RunScope("r-7f3a9k2m0q"), t0))
	f.Add(s.Sign(web.ScopeSite, t0.Add(time.Hour)))
	f.Add("")
	f.Add("-")
	f.Add("zzzzzzzzzzzz-aaaaaaaaaaaaaaaaaaaaaaaaaa")
	f.Add("1-" + strings.Repeat("a", 26))
	f.Add("00001-" + strings.Repeat("7", 26))
	f.Fuzz(func(t *testing.T, tok string) {
		exp, mac, err := web.ParseToken(tok)
		if err != nil {
			_, verr := s.Verify(web.RunScope("r-7f3a9k2m0q"), tok, t0)
			assert.ErrorIs(t, verr, web.ErrTokenInvalid, "what does not parse never verifies")
			return
		}
		assert.Len(t, mac, 16)
		assert.Positive(t, exp.Unix())
		// a parsed token is canonical: signing its expiry gives back the same shape
		again := s.Sign("any", exp)
		e1, _, _ := strings.Cut(again, "-")
		e2, _, _ := strings.Cut(tok, "-")
		assert.Equal(t, e1, e2)
		// and it verifies only when it is the real MAC
		if _, err := s.Verify(web.RunScope("r-7f3a9k2m0q"), tok, t0); err == nil {
			assert.Equal(t, s.Sign(web.RunScope("r-7f3a9k2m0q"), exp), tok)
		}
	})
}
