package bot

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/groundcrew/groundcrew/model/opmodel"
)

// fence has one concern: a write or destructive call leaves this process
// only while it surely holds the leader lease (Options.Lease). The
// store's fence already stops a deposed leader from journaling an
// intent; this one stops a leader paused between the intent and the call
// (GC pause, SIGSTOP, a VM frozen) from making the call when it wakes —
// possibly after the new leader reconciled the step and a person approved
// it again. Without a lease (one process alone on its store) calls go
// out as before.
type fence struct {
	lease opmodel.Lease
	log   *slog.Logger
	poll  time.Duration
}

// hold returns the context a call is made in: call's, bound to the lease
// (it ends the moment the lease would lapse) and carrying it, so the
// operation's client checks it again before each request (opmodel.Guard).
// When the lease is not surely held for longer than a call may take (a
// renewal is late, or this process just woke from a pause), hold waits
// for a renewal until this process steps down (the elector drops the
// lease at most a TTL after its last renewal) or the term ends; then the
// call is refused: nothing is sent, the log says why, and the step is
// left with its intent for the leader to reconcile (this process can no
// longer write its outcome anyway).
func (f fence) hold(term, call context.Context, runID, stepID, op string) (context.Context, context.CancelFunc, error) {
	if f.lease == nil {
		return call, func() {}, nil
	}
	call = opmodel.WithLease(call, f.lease)
	var why error // the first refusal: what the log says
	for {
		cctx, release, err := opmodel.Hold(call)
		if err == nil {
			return cctx, release, nil
		}
		if why == nil {
			why = err
		}
		var lapsed *opmodel.LapsedError
		waiting := errors.As(err, &lapsed) && !lapsed.NotLeading
		if waiting {
			select {
			case <-term.Done():
				waiting = false
			case <-time.After(f.poll):
			}
		}
		if !waiting {
			f.log.Warn("not calling "+op+": this process does not surely hold the leader lease; nothing was sent",
				"run", runID, "step", stepID, "op", op, "why", why.Error())
			return nil, nil, why
		}
	}
}
