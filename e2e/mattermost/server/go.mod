// Module mattermost-server only exists to build a real Mattermost server binary
// for the end-to-end tests. It is kept apart from the product's go.mod on purpose.
// Do not run `go mod tidy` here: the server imports enterprise packages behind
// build tags that the module proxy does not serve.
module github.com/groundcrew/groundcrew/e2e/mattermost/server

go 1.24.6

require (
	github.com/mattermost/mattermost/server/v8 v8.0.0-20251014075701-833e0125320d
	github.com/mattermost/mattermost/server/public v0.1.21
)

replace github.com/olekukonko/tablewriter => github.com/olekukonko/tablewriter v0.0.5
