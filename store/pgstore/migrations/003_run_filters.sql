-- A run's runbook and target as columns, and indexes that match a listing
-- filtered by runbook, target or one state (the pages' index, `runs list
-- --runbook/--target/--state`): most recent first within the value, so
-- such a listing reads the runs that match, not every run back to since.
-- The runs stored before are filled from their JSON (written by Go's
-- encoder: valid UTF-8). PostgreSQL's JSON functions refuse the escape of
-- a NUL character anywhere in a document; a run's text may hold one, so
-- it is replaced before reading (only the two names are read).
alter table runs add column runbook text not null default '',
                 add column target  text not null default '';
update runs set runbook = coalesce(j->>'runbook', ''), target = coalesce(j->>'target', '')
  from (select id as jid, replace(convert_from(data, 'UTF8'), '\u0000', '\ufffd')::json as j from runs) as decoded
  where id = jid;
create index runs_by_runbook on runs (runbook, created_at desc, id collate "C" desc);
create index runs_by_target on runs (target, created_at desc, id collate "C" desc);
create index runs_by_state on runs (state, created_at desc, id collate "C" desc);
