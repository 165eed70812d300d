// Package concourse is groundcrew's Concourse CI client and operation
// provider.
//
// The Client is shaped like go-concourse (typed methods, typed errors) but
// every method takes a context first. It logs in like `fly login -u -p`
// (password grant on /sky/issuer/token with the public `fly` client), keeps
// the token and logs in again when the token expires or the server answers
// 401 — the bot runs for weeks, fly does not. Idempotent GETs are retried
// with exponential backoff and jitter on 5xx and timeouts; writes are never
// retried blindly. Bulk work (aborting thousands of builds, scanning build
// logs) runs with a per-target concurrency limit.
//
// Errors are *StatusError values (or wrap one of the sentinels ErrNotFound,
// ErrUnauthorized, ErrForbidden, ErrConflict); their messages name the
// target, the action and the object, e.g.
//
//	infra-prd: prune worker "w-0": 400 cannot prune running worker
//
// Provider exposes the client to the runbook engine as bot operations named
// concourse.<op>; OPS.md documents every operation's arguments and the shape
// of its result data. The concoursesim subpackage is an in-process simulator
// of the Concourse API used by tests and the demo.
package concourse
