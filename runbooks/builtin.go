package runbooks

import (
	"embed"
	"io/fs"
)

//go:embed builtin/*.yaml
var builtinFS embed.FS

// Builtin returns the runbooks shipped inside the binary (the files of
// runbooks/builtin, at the root of the returned FS).
func Builtin() fs.FS {
	sub, err := fs.Sub(builtinFS, "builtin")
	if err != nil {
		panic(err) // the directory is embedded; this cannot happen
	}
	return sub
}
