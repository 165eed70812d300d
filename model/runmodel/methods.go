package runmodel

import "slices"

// CastVote records v on the gate, one vote per person. The same vote
// again through another channel (a ✅ reaction after the command) adds
// that channel to the vote, so taking one channel back (removing the
// reaction) leaves the vote cast through the other. A vote the other way,
// or a break-glass approval, replaces the earlier vote.
func (g *Gate) CastVote(v Vote) {
	for i := range g.Votes {
		old := &g.Votes[i]
		if old.User.ID != v.User.ID {
			continue
		}
		if old.Approve != v.Approve || v.BreakGlass || old.BreakGlass {
			g.Votes[i] = v
			return
		}
		if !old.CastVia(v.Via) {
			old.AlsoVia = append(old.AlsoVia, v.Via)
		}
		if old.Reason == "" {
			old.Reason = v.Reason
		}
		old.Groups = v.Groups
		return
	}
	g.Votes = append(g.Votes, v)
}

// CastVia reports whether the vote was cast through via.
func (v *Vote) CastVia(via VoteVia) bool {
	return v.Via == via || slices.Contains(v.AlsoVia, via)
}

// OtherVia is a channel of the vote other than via.
func (v *Vote) OtherVia(via VoteVia) VoteVia {
	for _, c := range append([]VoteVia{v.Via}, v.AlsoVia...) {
		if c != via {
			return c
		}
	}
	return via
}

// Withdraw takes back the channel via from a person's vote of that
// direction (a removed reaction takes back only what that reaction cast).
// The vote is removed when no channel is left (withdrawn true); a vote
// also cast another way stays (withdrawn false). ok is false when the
// person has no such vote through via.
func (g *Gate) Withdraw(userID string, approve bool, via VoteVia) (old Vote, withdrawn, ok bool) {
	for i := range g.Votes {
		v := &g.Votes[i]
		if v.User.ID != userID || v.Approve != approve || !v.CastVia(via) {
			continue
		}
		old = *v
		if len(v.AlsoVia) == 0 {
			g.Votes = append(g.Votes[:i], g.Votes[i+1:]...)
			return old, true, true
		}
		if v.Via == via {
			v.Via, v.AlsoVia = v.AlsoVia[0], v.AlsoVia[1:]
		} else {
			v.AlsoVia = slices.DeleteFunc(v.AlsoVia, func(c VoteVia) bool { return c == via })
		}
		if len(v.AlsoVia) == 0 {
			v.AlsoVia = nil
		}
		return old, false, true
	}
	return Vote{}, false, false
}

// Refused reports whether the gate already lists this refusal.
func (g *Gate) Refused(userID, action, why string) bool {
	for _, rf := range g.Refusals {
		if rf.User.ID == userID && rf.Action == action && rf.Reason == why {
			return true
		}
	}
	return false
}

// Current returns the state of the step at the cursor.
func (r *Run) Current() *StepState {
	if r.Cursor < 0 || r.Cursor >= len(r.Steps) {
		return nil
	}
	return &r.Steps[r.Cursor]
}
