package runbooks

import (
	"fmt"

	"github.com/groundcrew/groundcrew/model/textmodel"
)

// didYouMean formats a "; did you mean "x"?" hint, or "".
func didYouMean(word string, candidates []string) string {
	if s := textmodel.Suggest(word, candidates); s != "" {
		return fmt.Sprintf("; did you mean %q?", s)
	}
	return ""
}
