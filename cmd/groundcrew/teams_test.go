package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestServe_ConcourseAuthority: serve wired with authority: concourse and
// users:, the roles read from the simulator's teams' auth: a viewer of the
// team is refused, with the role they hold and the one needed; someone
// with no identity is told what to configure; a member's run asks its
// approvers for the role too.
func TestServe_ConcourseAuthority(t *testing.T) {
	world := filepath.Join(t.TempDir(), "teams.yaml")
	if err := os.WriteFile(world, []byte(`users:
  - {name: admin, password: admin, admin: true}
  - {name: pam, password: pam, teams: {payments: member}}
  - {name: vic, password: vic, teams: {payments: viewer}}
pipelines: [{name: api, team: payments, jobs: [{name: deploy}]}]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	say, waitFor, _ := consoleSessionWith(t, `    authority: concourse
  infra-teams:
    simulator: {world: `+world+`}
    authority: concourse
users:
  alice: local:pam
  bob: local:vic
`)
	say("/as bob")
	say("/runbook run pause-pipeline target=infra-teams pipeline=payments/api")
	waitFor("You may not run `pause-pipeline` on `infra-teams`: @bob is a viewer of team `payments` on `infra-teams`, and this change needs pipeline-operator or more there (authority: concourse).")
	say("/as carol")
	say("/runbook run pause-pipeline target=infra-teams pipeline=payments/api")
	waitFor("@carol has no Concourse identity groundcrew can look up on `infra-teams` (authority: concourse): add it under `users:` in groundcrew.yaml")
	say("/as alice")
	say("/runbook run pause-pipeline target=infra-teams pipeline=payments/api")
	waitFor("Concourse roles decide too (authority: concourse): each approver needs pipeline-operator or more on `payments`, on `infra-teams`")
}
