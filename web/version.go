package web

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"sort"
	"sync"

	"github.com/groundcrew/groundcrew/internal/human"
)

var staticVersion = sync.OnceValue(func() string {
	h := sha256.New()
	var names []string
	_ = fs.WalkDir(staticFS, "static", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names = append(names, p)
		}
		return nil
	})
	sort.Strings(names)
	for _, n := range names {
		b, _ := fs.ReadFile(staticFS, n)
		h.Write([]byte(n))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:10]
})

func humanCount(n int) string { return human.Count(n) }
