package scenario

import (
	"embed"
	"io/fs"
)

//go:embed builtin/*.yaml
var builtinFS embed.FS

// Builtin returns the scenarios of the built-in runbooks (the files of
// scenario/builtin, at the root of the returned FS).
func Builtin() fs.FS {
	sub, err := fs.Sub(builtinFS, "builtin")
	if err != nil {
		panic(err) // the directory is embedded; this cannot happen
	}
	return sub
}
