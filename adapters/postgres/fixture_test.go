package postgres

import (
	"testing"
	"time"
)

const day = 24 * time.Hour

// world is a small Concourse: two teams, their pipelines, builds of several
// ages and states, and their log events.
type world struct {
	*testDB
	main, infra                   int64 // team ids
	demo, small, deploy, gone     int64 // pipeline ids; gone was deleted
	demoJob                       int64
	demoOld, demoRecent           []int64 // completed build ids of main/demo
	demoRunning, demoReaped       int64
	deployBuilds                  []int64
	oneOff                        int64 // a one-off build of team main
	demoRows, deployRows, offRows int64
}

// newWorld seeds a database. Row counts are chosen so that table sizes are
// far apart: demo 600 rows > deploy 200 > gone 100 > check 50 > one-off 20 >
// small 5 (about 1 kB each).
func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{testDB: newTestDB(t)}
	w.main = w.team(t, "main")
	w.infra = w.team(t, "infra")
	w.demo = w.pipeline(t, w.main, "demo", "")
	w.small = w.pipeline(t, w.main, "small", "")
	w.deploy = w.pipeline(t, w.infra, "deploy", "")
	w.gone = w.pipeline(t, w.main, "gone", "")
	w.demoJob = w.job(t, w.demo, "unit")

	demoTable := eventsTable(KindPipeline, w.demo)
	for _, age := range []time.Duration{40 * day, 35 * day, 31 * day} {
		id := w.build(t, buildSpec{teamID: w.main, pipelineID: w.demo, jobID: w.demoJob, age: age, status: "failed"})
		w.demoOld = append(w.demoOld, id)
	}
	for _, age := range []time.Duration{2 * day, time.Hour} {
		id := w.build(t, buildSpec{teamID: w.main, pipelineID: w.demo, jobID: w.demoJob, age: age})
		w.demoRecent = append(w.demoRecent, id)
	}
	// Started 50 days ago and still running: never reaped.
	w.demoRunning = w.build(t, buildSpec{teamID: w.main, pipelineID: w.demo, jobID: w.demoJob, age: 50 * day, status: "started"})
	for _, id := range append(append(append([]int64{}, w.demoOld...), w.demoRecent...), w.demoRunning) {
		w.events(t, demoTable, id, 100, 1000)
		w.demoRows += 100
	}
	// Reaped long ago by Concourse: no events left, reap_time set.
	w.demoReaped = w.build(t, buildSpec{teamID: w.main, pipelineID: w.demo, jobID: w.demoJob, age: 60 * day, reaped: true})

	smallBuild := w.build(t, buildSpec{teamID: w.main, pipelineID: w.small, age: 90 * day})
	w.events(t, eventsTable(KindPipeline, w.small), smallBuild, 5, 1000)

	for _, age := range []time.Duration{100 * day, day} {
		id := w.build(t, buildSpec{teamID: w.infra, pipelineID: w.deploy, age: age})
		w.deployBuilds = append(w.deployBuilds, id)
		w.events(t, eventsTable(KindPipeline, w.deploy), id, 100, 1000)
		w.deployRows += 100
	}

	w.oneOff = w.build(t, buildSpec{teamID: w.main, age: 90 * day})
	w.events(t, eventsTable(KindTeam, w.main), w.oneOff, 20, 1000)
	w.offRows = 20

	// Check builds log into check_build_events (no builds row needed here).
	w.events(t, checkEventsTable, 900001, 50, 1000)

	// A deleted pipeline whose table Concourse's GC has not dropped yet.
	goneBuild := w.build(t, buildSpec{teamID: w.main, pipelineID: w.gone, age: 3 * day})
	w.events(t, eventsTable(KindPipeline, w.gone), goneBuild, 100, 1000)
	w.exec(t, `DELETE FROM pipelines WHERE id = $1`, w.gone)

	w.analyze(t)
	return w
}
