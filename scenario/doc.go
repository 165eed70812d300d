// Package scenario tests runbooks end to end without Concourse, chat or a
// database: a scenario file declares a simulated world (a concoursesim
// World, optionally a simulated Concourse database), who types and reacts
// what in the run's thread, and what must be true afterwards (run and step
// states, operations called or not, the state of the world).
//
// Run wires the real engine, a bbolt store in a temporary directory, the
// Concourse provider against an in-process simulator, a recording chat and
// a fake clock shared by the engine and the simulator, replays the inputs
// and checks the expectations. `groundcrew test [dir…]` and `go test
// ./scenario/...` (the built-in scenarios, Builtin) both use it.
//
// FORMAT.md documents the file format for operators who test their own
// runbooks.
package scenario
