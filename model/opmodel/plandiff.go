package opmodel

import (
	"fmt"
	"sort"
	"strings"
)

// PlanDiff says what changed between two plans, for a drift re-approval.
// An object no longer included is said as cur found it (Plan.Found), when
// cur says.
func PlanDiff(old, cur *Plan) string {
	key := func(it PlanItem) string { return it.Kind + " " + it.ID }
	was := map[string]PlanItem{}
	if old != nil {
		for _, it := range old.Items {
			was[key(it)] = it
		}
	}
	var added, removed, changed []string
	said := false // a removed object is said as cur found it
	now := map[string]bool{}
	for _, it := range cur.Items {
		k := key(it)
		now[k] = true
		prev, ok := was[k]
		switch {
		case !ok:
			added = append(added, "`"+it.ID+"`")
		case (Plan{Items: []PlanItem{prev}}).Hash() != (Plan{Items: []PlanItem{it}}).Hash():
			changed = append(changed, "`"+it.ID+"` "+attrDiff(prev.Attrs, it.Attrs))
		}
	}
	for k, it := range was {
		if !now[k] {
			if f := cur.FoundOf(it.Kind, it.ID); f != "" {
				removed, said = append(removed, f), true
			} else {
				removed = append(removed, "`"+it.ID+"`")
			}
		}
	}
	sort.Strings(removed)
	var parts []string
	if len(added) > 0 {
		parts = append(parts, "added "+capList(added, 10))
	}
	if len(removed) > 0 {
		if said {
			parts = append(parts, "no longer included: "+strings.Join(capped(removed, 10), "; "))
		} else {
			parts = append(parts, "no longer included "+capList(removed, 10))
		}
	}
	if len(changed) > 0 {
		parts = append(parts, "changed "+capList(changed, 10))
	}
	if len(parts) == 0 {
		return "the operation or target changed"
	}
	return strings.Join(parts, "; ")
}

func attrDiff(a, b map[string]string) string {
	var out []string
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	var ks []string
	for k := range keys {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	for _, k := range ks {
		if a[k] != b[k] {
			out = append(out, fmt.Sprintf("%s %s→%s", k, nonEmpty(a[k], "∅"), nonEmpty(b[k], "∅")))
		}
	}
	return "(" + strings.Join(out, ", ") + ")"
}

func capList(xs []string, n int) string {
	if len(xs) <= n {
		return strings.Join(xs, ", ")
	}
	return strings.Join(xs[:n], ", ") + fmt.Sprintf(" and %d more", len(xs)-n)
}

// capped is xs cut to n, with "… and N more" last when cut.
func capped(xs []string, n int) []string {
	if len(xs) <= n {
		return xs
	}
	return append(append([]string(nil), xs[:n]...), fmt.Sprintf("… and %d more", len(xs)-n))
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
