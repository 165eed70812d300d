package policy

import (
	"context"
	"strings"

	"github.com/groundcrew/groundcrew/model/runmodel"
)

// Recheck decides again whether a counted approval still qualifies, as the
// policy and the directory say now (the engine calls it with a directory
// that asks the platform afresh, right before the approved call). userID
// is the voter's platform id and userName the name they had when voting.
// It returns "" when the approval still counts, or why it no longer does,
// said of the voter ("not in @ci-oncall any more") for the gate and the
// journal.
func Recheck(ctx context.Context, p runmodel.Policy, requesterID, userID, userName string, breakGlass bool, dir Directory) (string, error) {
	if breakGlass {
		ok, err := InList(ctx, p.BreakGlass, userID, dir)
		if err != nil || ok {
			return "", err
		}
		return "no longer one of the break-glass users (" + DisplayList(p.BreakGlass) + ")", nil
	}
	if !p.SelfApproval && userID == requesterID {
		return "they started this run", nil
	}
	for _, list := range append([][]string{p.Approvers}, p.AlsoApprovers...) {
		if len(list) == 0 {
			continue
		}
		ok, err := InList(ctx, list, userID, dir)
		if err != nil {
			return "", err
		}
		if !ok {
			return notInList(list, userName), nil
		}
	}
	return "", nil
}

// notInList says why a voter no longer matches list: their handle, named
// in the list, now belongs to another account; they left the one group;
// or they are no longer among the entries.
func notInList(list []string, userName string) string {
	name := strings.ToLower(strings.TrimPrefix(userName, "@"))
	var groups []string
	for _, a := range list {
		if _, ok := Group(a); ok {
			groups = append(groups, a)
			continue
		}
		if name != "" && strings.EqualFold(strings.TrimPrefix(strings.TrimSpace(a), "@"), name) {
			return "the handle " + DisplayEntry(a) + " now names another account (or none)"
		}
	}
	if len(groups) == len(list) {
		return "not in " + strings.Join(displayAll(groups), " or ") + " any more"
	}
	return "no longer one of the approvers (" + DisplayList(list) + ")"
}

func displayAll(xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = DisplayEntry(x)
	}
	return out
}
