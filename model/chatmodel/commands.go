package chatmodel

import "context"

// CommandSpec declares a "/runbook" command that a subsystem answers (the
// incidents: `/runbook incidents …`). There is one parser of command text,
// the engine's: it reads the spec — the name and aliases in any case, the
// sub-verbs and how many words each takes, the usage and help lines — and
// hands the subsystem a parsed Invocation. The subsystem never reads
// command text.
type CommandSpec struct {
	// Name is the command's first word ("incidents"), lower case.
	Name string
	// Aliases are other first words for it ("incident").
	Aliases []string
	// Usage is the bare command's usage after "/runbook " ("incidents
	// [unacked] [target=<target>] [all] [page <n>]").
	Usage string
	// Help says what the bare command does, for `/runbook help`.
	Help string
	// MaxArgs is the most words the bare command takes after its name.
	MaxArgs int
	// Subs are the sub-verbs ("show <incident>"). A second word that is
	// one of them (in any case) selects it; any other is an argument of the
	// bare command.
	Subs []SubVerb
}

// SubVerb is a sub-command of a CommandSpec.
type SubVerb struct {
	// Name is the sub-verb ("show"), lower case.
	Name string
	// Args is how many words it takes after its name, exactly.
	Args int
	// Usage is its usage after "/runbook " ("incidents show <incident>").
	Usage string
	// Help says what it does, for `/runbook help`.
	Help string
}

// Names are the spec's name and aliases.
func (s CommandSpec) Names() []string { return append([]string{s.Name}, s.Aliases...) }

// Invocation is a parsed command of a CommandSpec: the words after the
// command's name (and sub-verb), split as the engine splits every command
// (quotes honoured, limits checked).
type Invocation struct {
	// Command is the spec's Name, whichever alias was typed.
	Command string
	// Sub is the sub-verb's Name, or "" for the bare command.
	Sub string
	// Args are the words after the name (and the sub-verb).
	Args []string
}

// Commander is a subsystem that answers commands: the engine parses every
// command and hands it the ones it declares. A refusal it answers itself
// (ephemerally); an error it returns is the handler's error.
type Commander interface {
	Commands() []CommandSpec
	RunCommand(ctx context.Context, ev Event, in Invocation) error
}
