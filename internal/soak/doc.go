// Package soak holds the seeded soak test (soak_test.go): random built-in
// runbooks against the Concourse simulator, random approvals, rejections
// and manual answers, and SIGKILLs of the bot process at random points,
// then invariants over the store, the simulator's request log and the
// audit chain. It has no non-test code.
package soak
