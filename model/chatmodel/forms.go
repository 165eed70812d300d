package chatmodel

import "context"

// Form asks a person for the parameters of a command they started without
// them. Submitting it is exactly typing Command followed by name=value for
// every field given: the same parsing, validation, policy and gates.
type Form struct {
	// Title is shown at the top ("Run worker-stalled").
	Title string `json:"title"`
	// Command is what the submission starts with ("run worker-stalled
	// target=infra-prd").
	Command string      `json:"command"`
	Fields  []FormField `json:"fields"`
}

// FormField is one parameter of a form.
type FormField struct {
	Name     string `json:"name"`
	Help     string `json:"help,omitempty"`
	Required bool   `json:"required,omitempty"`
	// Default is the value the field starts with.
	Default string `json:"default,omitempty"`
	// Options are the allowed values (a choice); empty: free text.
	Options []string `json:"options,omitempty"`
}

// FormOpener is a chat adapter that can ask for a command's parameters
// with a form (a Slack modal, a Mattermost dialog, the console's
// questions). ev is the command that lacked them.
type FormOpener interface {
	OpenForm(ctx context.Context, ev Event, f Form) error
}

// FormCommand is the command text a form's values submit: Command, then
// name=value for each non-empty value, in the fields' order.
func FormCommand(f Form, values map[string]string) string {
	text := f.Command
	for _, fd := range f.Fields {
		if v := values[fd.Name]; v != "" {
			text += " " + fd.Name + "=" + v
		}
	}
	return text
}

// FormChecker checks a form's values before the submission is taken, the
// way the command typed in full would be checked (the engine's own
// parameter validation): for each field that would be refused, the
// message, so the form shows it on that field and stays open. Nil or
// empty: nothing to show on a field (the submission goes ahead and the
// engine answers as it would the command). command is the form's Command.
type FormChecker interface {
	CheckForm(ctx context.Context, command string, values map[string]string) map[string]string
}
