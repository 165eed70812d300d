package policy

import (
	"context"
	"strings"

	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

// Approval is one approval to count: the voter's account as the platform
// describes it (id, name, kind) and whether it was a break-glass override.
// When a vote is cast the account is the event's user, as the chat
// adapter identified it; right before the approved call it is the same
// account looked up again by id (chatmodel.IdentityResolver.UserByID).
type Approval struct {
	Voter      chatmodel.User
	BreakGlass bool
}

// Standing is how an approval stands under a gate's policy.
type Standing struct {
	// Why is the reason it does not count (zero when it counts).
	Why Reason
	// Groups are the policy's required groups the voter belongs to
	// (when it counts).
	Groups []string
}

// Counts reports whether the approval counts.
func (s Standing) Counts() bool { return s.Why.kind == "" }

// Count decides whether an approval counts on a gate with policy p of a
// run requested by requesterID. It is the one rule for approvals: the
// engine asks it when a vote is cast (the gate shows what it says and
// decides from it) and asks it again, with the directory asked afresh,
// right before the approved call; the two can only disagree when the
// platform's answer changed in between.
//
// An approval counts when the voter's account is an active person; for a
// break-glass override, when the voter is one of the policy's break-glass
// users; otherwise when the voter is not the requester (unless the policy
// allows self-approval) and matches every approver list of the policy (the
// configured one, and each one a runbook narrowed it with). People are
// compared by platform id only.
func Count(ctx context.Context, p runmodel.Policy, requesterID string, a Approval, dir Directory) (Standing, error) {
	if why := a.Voter.NotAPerson(); why != "" {
		return Standing{Why: Reason{kind: whyAccount, account: a.Voter.Kind, toVoter: why}}, nil
	}
	id := a.Voter.ID
	if a.BreakGlass {
		// Every list: a change of several teams' things needs someone each
		// team lets break glass.
		for _, list := range append([][]string{p.BreakGlass}, p.AlsoBreakGlass...) {
			ok, err := InList(ctx, list, id, dir)
			if err != nil {
				return Standing{}, err
			}
			if !ok {
				return Standing{Why: Reason{kind: whyBreakGlass, list: list, all: p}}, nil
			}
		}
		// Breaking glass overrides the approvals, not Concourse's roles.
		return roleStanding(ctx, p, a.Voter, dir, Standing{})
	}
	if !p.SelfApproval && id == requesterID {
		return Standing{Why: Reason{kind: whyRequester}}, nil
	}
	for _, list := range append([][]string{p.Approvers}, p.AlsoApprovers...) {
		if len(list) == 0 {
			continue
		}
		ok, err := InList(ctx, list, id, dir)
		if err != nil {
			return Standing{}, err
		}
		if !ok {
			return Standing{Why: Reason{kind: whyNotListed, list: list, all: p, name: a.Voter.Name}}, nil
		}
	}
	groups, err := VoterGroups(ctx, p, id, dir)
	if err != nil {
		return Standing{}, err
	}
	return roleStanding(ctx, p, a.Voter, dir, Standing{Groups: groups})
}

// roleStanding is ok unless the gate asks for a Concourse role (authority:
// concourse) the voter does not hold on each team the change touches, as
// Concourse's own auth config says.
func roleStanding(ctx context.Context, p runmodel.Policy, voter chatmodel.User, dir Directory, ok Standing) (Standing, error) {
	if p.Roles == nil {
		return ok, nil
	}
	roles, _ := dir.(Roles)
	why, err := NeedRole(ctx, *p.Roles, voter, roles)
	if err != nil {
		return Standing{}, err
	}
	if why != "" {
		return Standing{Why: Reason{kind: whyRole, toVoter: why}}, nil
	}
	return ok, nil
}

// Reason is why an approval does not count. It is said two ways: to the
// voter when they vote (ToVoter) and, on the gate and in the journal, of
// a counted approval that no longer counts right before the call
// (NoLonger).
type Reason struct {
	kind    reasonKind
	account chatmodel.UserKind
	toVoter string          // the account's refusal, as chatmodel says it
	list    []string        // the approver list not matched
	all     runmodel.Policy // the policy (its approver lists, for ToVoter)
	name    string          // the voter's name when they voted
}

type reasonKind string

const (
	whyAccount    reasonKind = "account"     // not an active person
	whyRequester  reasonKind = "requester"   // started the run
	whyNotListed  reasonKind = "not-listed"  // not in an approver list
	whyBreakGlass reasonKind = "break-glass" // not a break-glass user
	whyRole       reasonKind = "role"        // no Concourse role for the change (authority: concourse)
)

// IsZero reports whether there is no reason (the approval counts).
func (r Reason) IsZero() bool { return r.kind == "" }

// ToVoter says why a vote being cast does not count, to the voter ("you
// are not an approver for this gate (approvers: @ci-oncall)").
func (r Reason) ToVoter() string {
	switch r.kind {
	case whyAccount:
		return r.toVoter
	case whyRequester:
		return "you started this run; someone else must approve it"
	case whyNotListed:
		if t, ok := teamOfList(r.all, r.list, false); ok {
			return "you are not an approver for team `" + t.Team + "`'s things (" + codeSources(t.Source) + ": " + DisplayList(r.list) + ")"
		}
		if len(r.all.Teams) > 0 {
			// Beside teams' own approvers: the target's, for the plan's
			// things no team's level covers.
			return "you are not one of the target's approvers (" + DisplayList(r.list) + "), needed for the things of this plan no team's policy covers"
		}
		return "you are not an approver for this gate (approvers: " + describeApprovers(r.all) + ")"
	case whyRole:
		return r.toVoter
	case whyBreakGlass:
		if t, ok := teamOfList(r.all, r.list, true); ok {
			return "only " + DisplayList(r.list) + " may break glass on team `" + t.Team + "`'s things (" + codeSources(t.Source) + ")"
		}
		return "only " + DisplayList(r.list) + " may break glass"
	}
	return ""
}

// NoLonger says why a counted approval no longer counts, of the voter
// ("not in @ci-oncall any more"), for the gate and the journal.
func (r Reason) NoLonger() string {
	switch r.kind {
	case whyAccount:
		switch r.account {
		case chatmodel.UserDeactivated:
			return "the account is deactivated"
		case chatmodel.UserBot:
			return "the account is a bot"
		case chatmodel.UserUnknown:
			return "the account no longer exists"
		}
		return "the platform no longer knows the account"
	case whyRequester:
		return "they started this run"
	case whyRole:
		return r.toVoter
	case whyNotListed:
		if t, ok := teamOfList(r.all, r.list, false); ok {
			return notInList(r.list, r.name) + " (team `" + t.Team + "`'s approvers)"
		}
		return notInList(r.list, r.name)
	case whyBreakGlass:
		return "no longer one of the break-glass users (" + DisplayList(r.list) + ")"
	}
	return ""
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
