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
	// Note says what the form could not offer, shown above the fields
	// ("Could not read the workers of infra-dev (connection refused):
	// type worker."); "" when nothing is amiss.
	Note string `json:"note,omitempty"`
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
	// Refresh says other fields depend on this one's value (the target
	// whose workers, pipelines or teams are offered): when a person
	// changes it in the form, the adapter asks FormRefresher.RefreshForm
	// for the form with the values entered and shows that one.
	Refresh bool `json:"refresh,omitempty"`
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
// engine answers as it would the command). command is the form's Command;
// in is where the form was opened (its channel decides which targets and
// teams may be named there).
type FormChecker interface {
	CheckForm(ctx context.Context, in Conversation, command string, values map[string]string) map[string]string
}

// FormRefresher gives a form again for the values entered so far, when a
// field marked Refresh changed: the live choices of the target picked,
// the values still valid kept as defaults, and a Note when the target
// cannot be read. command is the form's Command; the fields are the same
// as the form opened with; in is where the form was opened (only what its
// channel may act on is offered). An error means there is nothing to
// refresh (the runbook is gone): the form stays as it is.
type FormRefresher interface {
	RefreshForm(ctx context.Context, in Conversation, command string, values map[string]string) (Form, error)
}
