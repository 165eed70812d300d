// Package concoursesim is an in-process simulator of the Concourse v8 API
// subset groundcrew uses, built from real recorded exchanges
// (testdata/concourse/*.json; the contract tests replay every one of them).
//
// It answers with the same status codes, bodies and headers as the real
// server: X-Concourse-Version on every API response, Link pagination on
// build lists, 401 "not authorized", 403 "forbidden", empty 404 bodies,
// JSON:API 404s on the cache endpoints, 204 for aborts, 201 for checks, the
// prune refusal {"stderr":"cannot prune running worker"} and the 400 of a
// land or retire without a {"team": …} body. It issues opaque tokens on
// /sky/issuer/token for the `fly` client's password grant.
//
// Behind the API is a small world model with real transitions, evaluated
// against an injectable Clock whenever a request arrives:
//
//   - a running worker whose heartbeat stops (StopHeartbeat, or
//     no_heartbeat in the world) becomes stalled after the heartbeat TTL;
//   - land makes a worker landing, then landed once no started build runs
//     on it; retire deletes it the same way; prune deletes any worker that
//     is not running;
//   - an abort takes effect after the abort delay; a build started on a
//     worker that is not running is stuck and ignores aborts unless forced;
//   - on each scheduler tick, pending builds start on the least busy
//     running worker unless their pipeline or job is paused or a serial
//     job already has a started build; with no running worker they error
//     with "no workers satisfying: …", as the real server does.
//
// # Worlds
//
// A World declares the initial state and loads from YAML or JSON
// (LoadWorld), so scenario files can describe an incident:
//
//	cluster_name: infra-prd
//	users:
//	  - {name: admin, password: admin, admin: true}
//	  - {name: bob, password: bob, teams: {main: member}}
//	workers:
//	  - {name: w-0, state: stalled, containers: 236, age: 38d}
//	  - {name: w-1, containers: 228, age: 38d}
//	pipelines:
//	  - name: app
//	    team: main
//	    jobs:
//	      - {name: deploy, serial: true, tasks: [render, apply]}
//	      - {name: unit, tasks: [test], duration: 2m}
//	    resources: [{name: src, type: git, caches: 3}]
//	    resource_types: [{name: registry-image, type: registry-image}]
//	builds:
//	  - {pipeline: app, job: deploy, status: started, age: 3h}
//	  - {pipeline: app, job: deploy, status: pending, count: 300}
//	  - {pipeline: app, job: unit, status: errored, count: 3, age: 90m,
//	     log: ["fetching registry.example.com/nix"], error: image fetching failed}
//
// Durations accept Go syntax plus days ("38d"). Times are relative to the
// clock when the server starts. World.Validate reports unknown pipelines,
// jobs and states.
//
// The builder methods (NewWorld, RunningWorkers, StalledWorker,
// PendingBuilds, ErroredBuilds, AddPipeline, AddBuilds, DemoWorld) build
// the same struct in Go.
//
// # Tests
//
// New starts the simulator on a loopback httptest server. Options inject a
// ManualClock, the abort delay, the heartbeat TTL, the scheduler interval
// and latency; SetLatency and InjectFault (5xx, delays) change them at run
// time and ExpireTokens forces clients to log in again. Workers, Build,
// Builds, CountBuilds, Pipeline and ResourceCaches inspect the state; Calls
// and CountCalls return the request log, like slacktest.
package concoursesim
